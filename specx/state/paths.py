"""Where specx keeps things: config, data, state, and the model cache (its own directory)."""
from __future__ import annotations

import os
import re
from pathlib import Path

# A name specx turns into a file name (a preset's name, a converted copy's prefix): one plain path
# component, never `..`, a separator or a hidden file.
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def _dirs():
    from platformdirs import PlatformDirs

    return PlatformDirs("specx", appauthor=False)


def home() -> Path | None:
    """SPECX_HOME moves every specx directory except the model cache (tests use it)."""
    value = os.environ.get("SPECX_HOME")
    return Path(value).expanduser() if value else None


def config_dir() -> Path:
    h = home()
    return h / "config" if h else Path(_dirs().user_config_dir)


def data_dir() -> Path:
    h = home()
    return h / "data" if h else Path(_dirs().user_data_dir)


def state_dir() -> Path:
    h = home()
    return h / "state" if h else Path(_dirs().user_state_dir)


def model_cache() -> Path:
    """Converted safetensors copies and fetched wheels; SPECX_MODEL_CACHE, else the user cache dir."""
    return _cache("SPECX_MODEL_CACHE", "models")


def kernel_cache() -> Path:
    """Built native kernels (cpu/rowgemm.py); SPECX_KERNEL_CACHE, else the user cache dir."""
    return _cache("SPECX_KERNEL_CACHE", "kernels")


def copy_cache() -> Path:
    """Low-bit copies of a model's own layers (drafters/copycache.py); SPECX_COPY_CACHE, else SPECX_HOME's
    cache/copies, else the user cache dir's copies."""
    return _cache("SPECX_COPY_CACHE", "copies", under_home=True)


def _cache(variable: str, name: str, under_home: bool = False) -> Path:
    """A cache folder: the environment variable's path, else (`under_home`) SPECX_HOME's cache/`name`, else the
    user cache dir's `name`."""
    value = os.environ.get(variable)
    if value:
        return Path(value).expanduser()
    h = home() if under_home else None
    return h / "cache" / name if h else Path(_dirs().user_cache_dir) / name


def plain_name(name: str, what: str) -> str:
    """`name` when it is one plain component (letters, digits, `._-`, not starting with a dot)."""
    from ..errors import UsageError

    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise UsageError(f"{what} {name!r} is not a plain name",
                         "use letters, digits, '.', '_' and '-', starting with a letter or a digit")
    return name


def inside(path: Path, folder: Path) -> Path:
    """`path` when it is an entry of `folder` itself (symlinks in the folders above resolved, the entry's
    own name kept): where specx writes or deletes, so a name can never reach another folder."""
    from ..errors import UsageError

    path = Path(path)
    if path.name in ("", ".", "..") or path.parent.resolve() != Path(folder).resolve():
        raise UsageError(f"{path} is not in {folder}", "specx writes and deletes only inside its own folders")
    return path
