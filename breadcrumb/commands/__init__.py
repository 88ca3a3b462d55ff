"""Extra ``breadcrumb`` subcommands: each module here exposes ``register(subparsers)``
which adds its parser and sets ``handler=<callable(args, settings) -> int>``."""

from __future__ import annotations

import argparse
import importlib
import pkgutil


def register_all(sub: argparse._SubParsersAction) -> None:
    """Import every module of this package and let it add its subcommand(s)."""
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        register = getattr(module, "register", None)
        if register is not None:
            register(sub)
