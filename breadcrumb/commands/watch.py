"""``breadcrumb watch [DIR…]``: live capture of agent sessions.

Tails the session folders (default: every agent's, :data:`breadcrumb.watch.DEFAULT_FOLDERS`
— Claude Code, Codex, Gemini CLI, Copilot CLI, Cursor, OpenCode's store, Cline / Roo tasks;
Aider and SpecStory write inside projects: name those) and
publishes each new record once — to the query service (``--url``, default the one this
data dir's ``serve`` runs, else ``http://HOST:PORT``) or to Kafka (``--kafka``) — saving
its position in ``--state`` so a restart goes on where it stopped.
"""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path
from typing import Any

from breadcrumb.settings import Settings


def register(sub: Any) -> None:
    """Add ``breadcrumb watch``."""
    p = sub.add_parser("watch", help="tail agent session folders and publish new records")
    p.add_argument("folders", nargs="*", type=Path,
                   help="folders to watch (default: every agent's session folders)")
    p.add_argument("--data-dir", type=Path, default=None,
                   help="data dir whose running service receives the events")
    p.add_argument("--url", default=None, help="query service URL")
    p.add_argument("--api-key", default=None,
                   help="API key sent to the query service (default: $BREADCRUMB_API_KEY)")
    p.add_argument("--kafka", default=None, help="publish to Kafka at this bootstrap instead")
    p.add_argument("--topic-prefix", default=None,
                   help="prefix of the Kafka topic names (default: $BREADCRUMB_TOPIC_PREFIX)")
    p.add_argument("--user", default=None, help="tenant (default: the API key's tenant, else "
                   "BREADCRUMB_USER_ID, else 'local')")
    p.add_argument("--state", type=Path, default=None,
                   help="position file (default: DATA_DIR/watch-state.json)")
    p.add_argument("--interval", type=float, default=1.0, help="seconds between passes")
    p.add_argument("--idle-end", type=float, default=600.0,
                   help="seconds without growth after which a session is ended and flushed")
    p.add_argument("--once", action="store_true", help="one pass, then exit")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    """Watch until SIGINT / SIGTERM (or one pass with ``--once``)."""
    import httpx

    from breadcrumb.clients import service as local_client
    from breadcrumb.clients.sdk import Breadcrumb, BreadcrumbError, PublishError
    from breadcrumb.watch import DEFAULT_FOLDERS, SdkSink, Watcher

    folders = args.folders or [Path(f).expanduser() for f in DEFAULT_FOLDERS]
    url = args.url or local_client.running_server(settings) or (
        None if args.kafka else f"http://{settings.host}:{settings.port}")
    state = args.state or settings.data_dir / "watch-state.json"
    user = local_client.default_user(settings, args.user, url)
    try:
        with Breadcrumb(url=url, kafka=args.kafka, topic_prefix=args.topic_prefix,
                        user_id=user, api_key=args.api_key) as bc:
            watcher = Watcher(folders, SdkSink(bc), state, user_id=user,
                              idle_end_seconds=args.idle_end)
            if args.once:
                sent = watcher.poll_once()
            else:
                stopping: list[int] = []
                for sig in (signal.SIGINT, signal.SIGTERM):
                    signal.signal(sig, lambda number, _frame: stopping.append(number))
                sys.stderr.write(f"watching {', '.join(map(str, folders))} → "
                                 f"{url or args.kafka}\n")
                watcher.run(args.interval, stop=lambda: bool(stopping))
                sent = watcher.stats.events_sent
    except (BreadcrumbError, PublishError) as exc:  # a refused key, a service gone: one line
        raise local_client.ClientError(str(exc)) from None
    except httpx.TransportError as exc:
        raise local_client.unreachable(str(url or args.kafka), exc) from None
    sys.stdout.write(f'{{"events_sent": {sent}, "sessions_ended": '
                     f'{watcher.stats.sessions_ended}, "skipped_files": '
                     f'{len(watcher.stats.skipped_files)}}}\n')
    return 0
