"""The emulator's own test fixtures (``packages/local_cloud/tests``), for the harness tests that drive the
app's scenarios on them (the app's producer and order API server on the emulator's small REST API).

The package's tests are not an importable package (pytest imports them by file name): a module is
loaded here from its file, under the name the package's tests import it by, and registered so the
package's own imports of it (``import apigw_fixture``) find the same module.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

PACKAGE_TESTS = Path(__file__).resolve().parents[2] / "packages" / "local_cloud" / "tests"


def load(name: str, *, requires: tuple[str, ...] = ()) -> ModuleType:
    """The module ``PACKAGE_TESTS/<name>.py`` (loaded once), after the sibling modules it ``requires``."""
    for dependency in requires:
        load(dependency)
    path = PACKAGE_TESTS / f"{name}.py"
    loaded = sys.modules.get(name)
    if loaded is not None and Path(loaded.__file__ or "").resolve() == path:
        return loaded
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"no emulator test module {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
