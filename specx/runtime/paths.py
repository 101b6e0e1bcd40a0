"""Where specx keeps things: config, data, state, and the model cache (its own directory)."""
from __future__ import annotations

import os
from pathlib import Path


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
    value = os.environ.get("SPECX_MODEL_CACHE")
    if value:
        return Path(value).expanduser()
    return Path(_dirs().user_cache_dir) / "models"


def kernel_cache() -> Path:
    """Built native kernels (kernels/rowgemm.py); SPECX_KERNEL_CACHE, else the user cache dir."""
    value = os.environ.get("SPECX_KERNEL_CACHE")
    if value:
        return Path(value).expanduser()
    return Path(_dirs().user_cache_dir) / "kernels"
