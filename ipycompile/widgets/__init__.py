"""Views over a report (ipywidgets, static HTML, matplotlib): arriving with the report-view issue."""
