"""The report: plain dataclasses, JSON round-trip, queries; its text is the registered view's (`str(report)`)."""

from .model import *  # noqa: F401,F403
from .model import __all__ as _model_all
from .owners import CodeLayout, Owner
from .report import CompileReport, SCHEMA_VERSION

__all__ = ["CompileReport", "SCHEMA_VERSION", "CodeLayout", "Owner", *_model_all]
