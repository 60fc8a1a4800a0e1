"""The report: plain dataclasses, JSON round-trip, and a plain-text summary."""

from .model import *  # noqa: F401,F403
from .model import __all__ as _model_all
from .report import CompileReport, SCHEMA_VERSION

__all__ = ["CompileReport", "SCHEMA_VERSION", *_model_all]
