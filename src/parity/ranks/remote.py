"""A remote endpoint: an OpenAI-compatible server (vLLM, SGLang, TGI) and the model it serves,
identified by what the server itself reports.

``await probe_endpoint(url, model)`` asks ``GET {url}/v1/models`` and keeps the entry of
``model`` exactly as the server returned it (``id``, ``owned_by``, and whatever else it adds:
vLLM's ``root`` and ``max_model_len``...). The record's identity is the URL, the model id and
the stable reported fields (``IDENTITY_FIELDS``); fields that change on every request (vLLM's
``created`` is the time of the request, ``permission`` ids are fresh) stay in the provenance
only, so a resumed run against the same server and model matches. The engine's version, where
the server says it (vLLM's ``/version``, TGI's ``/info``), is kept in ``server.version`` for
the audit.

The client is aiohttp (the ``remote`` extra: ``pip install 'parity[remote]'``), an asyncio
client, because the decode family streams many concurrent requests from one event loop; it is
imported only when a probe runs. Proxies from the environment are not used: the URL is the
server. An API key, when given, is sent as a bearer token and never recorded.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, ClassVar
from urllib.parse import urlsplit

from parity.model.errors import ParityError, one_line
from parity.ranks.record import Target

DEFAULT_TIMEOUT_S = 10.0
VERSION_TIMEOUT_S = 2.0  # the version is a fact for the audit, not worth holding a run for
IDENTITY_FIELDS = ("owned_by", "root", "parent", "max_model_len")


@dataclass(frozen=True, kw_only=True)
class RemoteEndpoint:
    """A probed endpoint: ``url`` without ``/v1``, the served ``model`` id, the model's entry
    as ``reported``, and ``server`` facts (the Server header, every model it lists)."""

    url: str
    model: str
    reported: Mapping[str, Any] = field(default_factory=dict)
    server: Mapping[str, Any] = field(default_factory=dict)
    probed_utc: str = ""

    kind: ClassVar[str] = "remote"

    @property
    def is_writer(self) -> bool:
        """The client process measuring the endpoint writes the store."""
        return True

    def record(self) -> Target:
        """The stored record: URL, model and the stable reported fields identify it; the full
        answer is its provenance."""
        stable = {k: self.reported[k] for k in IDENTITY_FIELDS if self.reported.get(k) is not None}
        return Target(
            kind="remote",
            name=f"{self.model} at {self.url}",
            identity={"url": self.url, "model": self.model, **stable},
            provenance=(
                {
                    "url": self.url,
                    "model": self.model,
                    "reported": dict(self.reported),
                    "server": dict(self.server),
                    "probed_utc": self.probed_utc,
                },
            ),
        )


def endpoint_base(url: str) -> str:
    """``http(s)://HOST[:PORT][/prefix]`` with any trailing ``/`` and ``/v1`` removed."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ParityError(
            f"remote url {url!r} is not http(s)://HOST[:PORT]; e.g. http://127.0.0.1:8000"
        )
    path = parts.path.rstrip("/")
    if path.endswith("/v1"):
        path = path[: -len("/v1")]
    return f"{parts.scheme}://{parts.netloc}{path}"


def listed_models(document: Any, *, url: str) -> list[dict[str, Any]]:
    """The model entries of a ``/v1/models`` answer (``{"data": [{"id": ...}, ...]}``)."""
    entries = document.get("data") if isinstance(document, dict) else None
    if not isinstance(entries, list) or not all(
        isinstance(e, dict) and isinstance(e.get("id"), str) for e in entries
    ):
        raise ParityError(
            f"{url}/v1/models did not answer an OpenAI model list ({{'data': [{{'id': ...}}]}});"
            " check that the url is an OpenAI-compatible server"
        )
    return entries


def select_model(entries: list[dict[str, Any]], model: str | None, *, url: str) -> dict[str, Any]:
    """The entry of ``model``; with ``model=None``, the only model the server serves."""
    ids = [e["id"] for e in entries]
    if not ids:
        raise ParityError(f"{url} serves no model; load one in the server first")
    if model is None:
        if len(ids) > 1:
            raise ParityError(f"{url} serves several models ({', '.join(ids)}); name one")
        return entries[0]
    for entry in entries:
        if entry["id"] == model:
            return entry
    raise ParityError(f"{url} does not serve model {model!r}; it serves: {', '.join(ids)}")


async def probe_endpoint(
    url: str,
    model: str | None = None,
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    api_key: str | None = None,
) -> RemoteEndpoint:
    """Ask the server at ``url`` what it serves; the ``RemoteEndpoint`` of ``model``."""
    base = endpoint_base(url)
    status, server_header, body = await _get(f"{base}/v1/models", timeout_s, api_key)
    if status != 200:
        raise ParityError(
            f"{base}/v1/models answered HTTP {status}; check the url, the server and its API key"
        )
    try:
        document = json.loads(body)
    except ValueError:
        document = None
    entries = listed_models(document, url=base)
    entry = select_model(entries, model, url=base)
    server: dict[str, Any] = {"header": server_header, "models": [e["id"] for e in entries]}
    version = await server_version(base, api_key=api_key)
    if version is not None:
        server["version"] = version
    return RemoteEndpoint(
        url=base,
        model=entry["id"],
        reported=dict(entry),
        server=server,
        probed_utc=datetime.now(timezone.utc).isoformat(timespec="seconds"),
    )


async def server_version(base: str, *, api_key: str | None = None,
                         timeout_s: float = VERSION_TIMEOUT_S) -> str | None:
    """The engine version the server reports, for the audit: vLLM's ``GET /version``
    (``{"version": "0.7.3"}``), else TGI's ``GET /info`` (its ``version``); None when neither
    answers within ``timeout_s`` (a server without them is not an error)."""
    for path in ("/version", "/info"):
        try:
            status, _, body = await _get(f"{base}{path}", timeout_s, api_key)
            document = json.loads(body) if status == 200 else None
        except (ParityError, ValueError):
            continue
        if isinstance(document, dict) and isinstance(document.get("version"), str):
            return document["version"]
    return None


def probe_endpoint_blocking(
    url: str,
    model: str | None = None,
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    api_key: str | None = None,
) -> RemoteEndpoint:
    """``probe_endpoint`` for callers without an event loop of their own."""
    return asyncio.run(probe_endpoint(url, model, timeout_s=timeout_s, api_key=api_key))


async def _get(address: str, timeout_s: float, api_key: str | None) -> tuple[int, str | None, str]:
    """``(status, Server header, body)`` of one GET; a ParityError when it cannot be had."""
    aiohttp = _aiohttp()
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        async with aiohttp.ClientSession(
            timeout=aiohttp.ClientTimeout(total=timeout_s), headers=headers
        ) as session, session.get(address) as response:
            return response.status, response.headers.get("Server"), await response.text()
    except asyncio.TimeoutError:
        raise ParityError(
            f"{address} did not answer within {timeout_s:g} s; is the server up and idle?"
        ) from None
    except aiohttp.ClientError as exc:
        text = one_line(exc, 200)
        raise ParityError(
            f"cannot reach {address}: {text}; start the server or fix the url"
        ) from None


def _aiohttp() -> Any:
    try:
        import aiohttp
    except ImportError:
        raise ParityError(
            "remote endpoints need the aiohttp client; pip install 'parity[remote]'"
        ) from None
    return aiohttp
