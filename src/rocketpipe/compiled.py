"""Loading the optional compiled loops (L0; stdlib only).

``setup.py`` builds four C extensions when a compiler is there: the batch-put loop
(``rocketpipe.store._batch_records``), the key-index write (``rocketpipe.store._index_put``),
the protocol's loops (``rocketpipe.protocol._records``: pull decoding, the batch body, the
records of a store put, the Spark source's record walk and properties split) and the JSON
header decoder (``rocketpipe.protocol._header``). Each has a
pure-Python twin that is the reference and the fallback; ``ROCKETPIPE_PURE_PYTHON=1`` forces the
Python code even when the extensions are built.
"""

from __future__ import annotations

import importlib
import os
import warnings
from typing import Any, Final

__all__ = ["ENV_VAR", "load"]

ENV_VAR: Final = "ROCKETPIPE_PURE_PYTHON"


def load(module: str, name: str) -> tuple[Any, Any]:
    """The function ``name`` of the extension ``module`` (a dotted name).

    Imported by name, so the import graph checks (import-linter, the cycle test), which only see
    ``.py`` modules, do not look for it.

    Returns:
        ``(built, active)``: the function, or None when the extension was not built (or was built
        from older sources without it, which warns: UserWarning); and the one to use: ``built``,
        or None when ``ROCKETPIPE_PURE_PYTHON=1``.
    """
    try:
        built: Any = getattr(importlib.import_module(module), name)
    except ImportError:  # pragma: no cover - a build without the extension
        built = None
    except AttributeError:  # an extension built from older sources (pip install -e . rebuilds it)
        # a warning, not a log line: protocol/ imports this and stays free of logging's threading
        warnings.warn(f"{module} has no {name}: built from older sources; the Python code runs instead", stacklevel=2)
        built = None
    return built, None if os.environ.get(ENV_VAR) == "1" else built
