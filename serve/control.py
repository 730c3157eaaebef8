"""Model control as Triton does it (none, poll, explicit) and the restricted model-repository API."""

from __future__ import annotations

import asyncio
import hmac
import logging
from dataclasses import dataclass

from serve.config import RepositoryError
from serve.defaults import MODES
from serve.protocol import ProtocolError
from serve.repository import Repository, fingerprint, model_names

logger = logging.getLogger("serve.control")

RESTRICTABLE = ("model-repository",)


class ModelControl:
    """Loads every model at startup, then reloads on request (explicit) or on changes on disk (poll)."""

    def __init__(self, repository: Repository, mode: str, poll_interval_s: float) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown model control mode {mode!r}; choose one of {', '.join(MODES)}")
        self.repository = repository
        self.mode = mode
        self.poll_interval_s = poll_interval_s
        self._seen: dict[str, tuple] = {}
        self._poller: asyncio.Task | None = None

    def announce(self) -> None:
        """Report every model on disk as LOADING (503) until it loads; call before the first request.
        A repository that cannot be listed is reported by start()."""
        try:
            self.repository.announce(model_names(self.repository.root))
        except (RepositoryError, OSError):
            pass

    async def start(self) -> bool:
        """Load every model on disk; False when none loaded and no later load could add one."""
        repository = self.repository
        names = await asyncio.to_thread(model_names, repository.root)
        for name in names:
            await self._load_changed(name)
        if repository.state == "loading":
            repository.state = "ready"
        if self.mode == "poll":
            self._poller = asyncio.get_running_loop().create_task(self._poll())
        return bool(repository.models) or self.mode != "none"

    async def load(self, name: str) -> None:
        """Load or reload model NAME (explicit mode only)."""
        self._check_explicit("load")
        if not await asyncio.to_thread(self.repository.on_disk, name):
            raise ProtocolError(f"failed to load model '{name}': the repository has no model directory '{name}'", 404)
        await self.repository.load(name)

    async def unload(self, name: str) -> None:
        """Unload every version of model NAME (explicit mode only)."""
        self._check_explicit("unload")
        await self.repository.unload(name)

    def _check_explicit(self, action: str) -> None:
        if self.mode != "explicit":
            raise ProtocolError(
                f"cannot {action} models in model control mode '{self.mode}'; "
                "start the server with --model-control-mode explicit"
            )

    async def _load_changed(self, name: str) -> None:
        """Load NAME if its files differ from the last attempt; failures are logged and kept in the index."""
        stamp = await asyncio.to_thread(fingerprint, self.repository.root, name)
        if self._seen.get(name) == stamp:
            return
        self._seen[name] = stamp
        try:
            await self.repository.load(name)
        except ProtocolError:
            # The repository has logged the reason and shows it in the index.
            pass

    async def _poll(self) -> None:
        repository = self.repository
        while True:
            await asyncio.sleep(self.poll_interval_s)
            try:
                names = await asyncio.to_thread(model_names, repository.root)
            except Exception as exc:
                logger.error("cannot poll the model repository %s: %s", repository.root, exc)
                continue
            try:
                for name in names:
                    await self._load_changed(name)
                for name in set(self._seen) - set(names):
                    del self._seen[name]
                    if name in repository.models:
                        await repository.unload(name)
            except Exception:
                # Polling goes on: the next round retries whatever this one could not finish.
                logger.exception("polling the model repository %s failed", repository.root)

    async def stop(self) -> None:
        """Stop polling."""
        if self._poller is not None:
            self._poller.cancel()
            await asyncio.gather(self._poller, return_exceptions=True)


@dataclass(frozen=True)
class Restriction:
    """A required header (gRPC metadata) key and value guarding an API category, as Triton's
    --http-restricted-api does: 'model-repository:admin-key=secret'."""

    category: str
    key: str
    value: str

    @classmethod
    def parse(cls, text: str) -> Restriction:
        """Read CATEGORY:KEY=VALUE."""
        category, colon, rest = text.partition(":")
        key, equals, value = rest.partition("=")
        if not colon or not equals or not key or not value:
            raise ValueError(f"expected CATEGORY:KEY=VALUE (e.g. model-repository:admin-key=secret), got {text!r}")
        if category not in RESTRICTABLE:
            raise ValueError(f"unknown API category {category!r}; restrictable: {', '.join(RESTRICTABLE)}")
        if not all(c.isascii() and (c.isalnum() or c in "-_") for c in key):
            raise ValueError(f"the key must be letters, digits, '-' and '_' (a header name), got {key!r}")
        return cls(category, key.lower(), value)

    def check(self, supplied: str | None) -> None:
        """Raise a 403 ProtocolError unless the request carried the key with the right value."""
        if supplied is None or not hmac.compare_digest(supplied.encode(), self.value.encode()):
            raise ProtocolError(
                f"this API is restricted: the {self.category} endpoints need header '{self.key}' with the configured value",
                403,
            )
