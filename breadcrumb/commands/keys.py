"""``breadcrumb keys create | list | revoke``: API keys of this deployment.

Embedded, the keys live in the data dir (``keys.sqlite3``, mode 0600); cluster, in the SQL
store. A running service sees a new or revoked key within about a second: no restart.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import orjson

from breadcrumb.settings import Settings
from breadcrumb.stores.keys.store import ROLES, key_store_for, new_key, utc_now_iso


def register(sub: Any) -> None:
    """Add the ``keys`` subcommand and its three actions."""
    keys = sub.add_parser("keys", help="create, list or revoke API keys")
    actions = keys.add_subparsers(dest="keys_action", required=True)
    create = actions.add_parser("create", help="create a key; prints it alone on the last line")
    create.add_argument("--tenant", required=True, help="the user_id this key acts for")
    create.add_argument("--role", required=True, choices=ROLES,
                        help="agent: publish and recall; reader: also read threads and "
                             "memories; admin: everything, any tenant")
    listing = actions.add_parser("list", help="list keys (never their secrets)")
    listing.add_argument("--json", action="store_true", help="print JSON")
    revoke = actions.add_parser("revoke", help="revoke a key by its id")
    revoke.add_argument("key_id", help="the key's id (the part after bc_, from keys list)")
    for p in (create, listing, revoke):
        p.add_argument("--data-dir", type=Path, default=None,
                       help="embedded data folder (./.breadcrumb)")
        p.add_argument("--mode", choices=["embedded", "cluster"], default=None,
                       help="where keys live: the data dir (embedded) or the SQL store "
                            "(cluster); $BREADCRUMB_MODE")
        p.set_defaults(handler=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    """Dispatch to create / list / revoke."""
    actions = {"create": create_key, "list": list_keys, "revoke": revoke_key}
    return actions[args.keys_action](args, settings)


def create_key(args: argparse.Namespace, settings: Settings) -> int:
    try:
        record, plaintext = new_key(args.tenant, args.role)
    except ValueError as exc:
        sys.stderr.write(f"breadcrumb keys: {exc}\n")
        return 2
    key_store_for(settings).add(record)
    sys.stderr.write(f"created key {record.key_id} (tenant {record.tenant!r}, role "
                     f"{record.role}); it is shown once and stored hashed:\n")
    sys.stdout.write(plaintext + "\n")
    return 0


def list_keys(args: argparse.Namespace, settings: Settings) -> int:
    rows = [key.public() for key in key_store_for(settings).list_keys()]
    if args.json:
        sys.stdout.write(orjson.dumps(rows, option=orjson.OPT_INDENT_2).decode() + "\n")
        return 0
    sys.stdout.write(f"{'key_id':<14}{'role':<8}{'created_at':<27}{'revoked_at':<27}tenant\n")
    for row in rows:
        sys.stdout.write(f"{row['key_id']:<14}{row['role']:<8}{row['created_at']:<27}"
                         f"{row['revoked_at'] or '-':<27}{row['tenant']}\n")
    return 0


def revoke_key(args: argparse.Namespace, settings: Settings) -> int:
    store = key_store_for(settings)
    if store.revoke(args.key_id, utc_now_iso()):
        sys.stdout.write(f"revoked {args.key_id}\n")
        return 0
    known = store.get(args.key_id)
    reason = "already revoked" if known is not None else "no such key"
    sys.stderr.write(f"breadcrumb keys: {args.key_id}: {reason}\n")
    return 1
