"""The IPython layer (the ``%%compile`` magic arrives with its own issue)."""


def load_ipython_extension(ipython) -> None:
    raise NotImplementedError("the %%compile magic is not available yet; use `with ipycompile.capture(): ...`")


def unload_ipython_extension(ipython) -> None:
    pass
