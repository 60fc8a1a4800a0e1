"""torch's ``dump_file`` events: a file of generated code written whole into the trace.

Dynamo writes one (``torch._logging.structured.dump_file``) the first time in a process it
traces code from a file that exists only in memory: an FX GraphModule's generated
``forward``, whose file name is ``<eval_with_key>.N`` (``torch.fx.symbolic_trace``, a
library that generates modules, such as e3nn). The event's metadata is ``{"name": file name}``
and its payload the file's source; tlparse shows it as a page of its own.
"""

from __future__ import annotations

from typing import Any, Optional


def dumped_file_name(body: Any) -> Optional[str]:
    """The file name of a ``dump_file`` event's metadata (``{"name": "<eval_with_key>.3"}``);
    None when the event names none (a form of the event this version does not know)."""
    name = body.get("name") if isinstance(body, dict) else None
    return name if isinstance(name, str) and name else None
