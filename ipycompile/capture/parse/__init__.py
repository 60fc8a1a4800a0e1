"""Parsers for torch structured-trace payloads: pure functions of text."""
