"""Pure functions over a finished :class:`~ipycompile.CompileReport`."""
