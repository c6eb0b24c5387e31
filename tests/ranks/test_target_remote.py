"""Remote endpoints probed against a real OpenAI-compatible ``GET /v1/models`` on 127.0.0.1."""

from __future__ import annotations

import asyncio
import itertools
import re
from collections.abc import Callable
from typing import Any

import pytest

from parity.model.errors import ParityError
from parity.ranks import check_same_target, free_port, probe_endpoint, probe_endpoint_blocking
from parity.ranks.remote import RemoteEndpoint, endpoint_base, listed_models, select_model

aiohttp = pytest.importorskip("aiohttp")
from aiohttp import web  # noqa: E402

from loopback import serving  # noqa: E402

_created = itertools.count(1_800_000_000)


def vllm_like(*ids: str) -> dict[str, Any]:
    """A model list shaped like vLLM's: ``created`` is the time of the request, the permission
    id is fresh each time."""
    created = next(_created)
    return {
        "object": "list",
        "data": [
            {
                "id": model,
                "object": "model",
                "created": created,
                "owned_by": "vllm",
                "root": f"/models/{model}",
                "parent": None,
                "max_model_len": 2048,
                "permission": [{"id": f"modelperm-{created}", "allow_sampling": True}],
            }
            for model in ids
        ],
    }


def _app(handler: Callable[[web.Request], Any]) -> web.Application:
    app = web.Application()
    app.router.add_get("/v1/models", handler)
    return app


def probe_with(handler: Callable[[web.Request], Any], url_suffix: str = "", **kwargs: Any) -> Any:
    """Serve ``handler`` at /v1/models and probe it; the endpoint or the ParityError raised."""

    async def run() -> Any:
        async with serving(_app(handler)) as url:
            try:
                return await probe_endpoint(url + url_suffix, **kwargs)
            except ParityError as exc:
                return exc

    return asyncio.run(run())


def test_endpoint_is_identified_by_what_the_server_reports() -> None:
    async def models(request: web.Request) -> web.Response:
        return web.json_response(vllm_like("tiny-chat"))

    async def probe_twice() -> tuple[Any, Any]:
        async with serving(_app(models)) as url:
            first = await probe_endpoint(url + "/v1/", "tiny-chat")
            return first, await probe_endpoint(url, "tiny-chat")

    endpoint, again = asyncio.run(probe_twice())
    assert endpoint.model == "tiny-chat"
    assert endpoint.reported["max_model_len"] == 2048
    assert endpoint.server["models"] == ["tiny-chat"]
    assert "aiohttp" in endpoint.server["header"]
    record = endpoint.record()
    assert record.kind == "remote"
    assert record.identity == {
        "url": endpoint.url,
        "model": "tiny-chat",
        "owned_by": "vllm",
        "root": "/models/tiny-chat",
        "max_model_len": 2048,
    }
    (provenance,) = record.provenance
    assert provenance["reported"]["permission"][0]["id"].startswith("modelperm-")
    # the second probe differs in created and permission, not in identity: a resume matches
    assert again.reported["created"] != endpoint.reported["created"]
    check_same_target(record, again.record())


def test_the_only_model_is_chosen_and_the_api_key_is_sent_not_recorded() -> None:
    seen: list[str | None] = []

    async def models(request: web.Request) -> web.Response:
        seen.append(request.headers.get("Authorization"))
        return web.json_response(vllm_like("only"))

    endpoint = probe_with(models, api_key="sk-test")
    assert endpoint.model == "only"
    assert seen == ["Bearer sk-test"]
    assert "sk-test" not in repr(endpoint.record().to_dict())


@pytest.mark.parametrize(
    ("body", "model", "message"),
    [
        (vllm_like("a", "b"), "c", r"does not serve model 'c'; it serves: a, b$"),
        (vllm_like("a", "b"), None, r"serves several models \(a, b\); name one$"),
        (vllm_like(), None, "serves no model"),
        ({"models": ["a"]}, None, "did not answer an OpenAI model list"),
    ],
)
def test_wrong_model_or_listing_is_one_line_naming_it(body: Any, model: Any, message: str) -> None:
    async def models(request: web.Request) -> web.Response:
        return web.json_response(body)

    error = probe_with(models, model=model)
    assert isinstance(error, ParityError)
    assert "\n" not in str(error)
    assert re.search(message, str(error)), str(error)


def test_http_errors_and_text_are_reported() -> None:
    async def missing(request: web.Request) -> web.Response:
        return web.Response(status=404, text="no such route")

    async def text(request: web.Request) -> web.Response:
        return web.Response(text="hello")

    assert "answered HTTP 404" in str(probe_with(missing))
    assert "did not answer an OpenAI model list" in str(probe_with(text))


def test_a_server_that_does_not_answer_in_time_is_reported() -> None:
    async def run() -> ParityError:
        release = asyncio.Event()

        async def stalled(request: web.Request) -> web.Response:
            await release.wait()
            return web.json_response(vllm_like("late"))

        async with serving(_app(stalled)) as url:
            with pytest.raises(ParityError) as caught:
                await probe_endpoint(url, timeout_s=0.2)
            release.set()
        return caught.value

    message = str(asyncio.run(run()))
    assert message.endswith("did not answer within 0.2 s; is the server up and idle?")


def test_nothing_listening_is_a_one_line_error() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(ParityError, match=r"^cannot reach http://127\.0\.0\.1:\d+/v1/models: .*"):
        probe_endpoint_blocking(url, "m", timeout_s=5)


def test_urls_are_normalised_and_bad_ones_refused() -> None:
    assert endpoint_base("http://127.0.0.1:8000/v1/") == "http://127.0.0.1:8000"
    assert endpoint_base(" https://host/prefix/v1 ") == "https://host/prefix"
    with pytest.raises(ParityError, match="is not http"):
        endpoint_base("127.0.0.1:8000")


def test_listing_helpers_on_hand_written_answers() -> None:
    entries = listed_models({"data": [{"id": "m", "owned_by": "x"}]}, url="u")
    assert select_model(entries, "m", url="u") == {"id": "m", "owned_by": "x"}
    with pytest.raises(ParityError):
        listed_models({"data": [{"name": "m"}]}, url="u")


def test_the_probe_keeps_the_version_a_vllm_server_reports() -> None:
    async def models(request: web.Request) -> web.Response:
        return web.json_response(vllm_like("tiny-chat"))

    async def version(request: web.Request) -> web.Response:
        return web.json_response({"version": "0.8.0.dev12+g1a2b"})

    app = _app(models)
    app.router.add_get("/version", version)

    async def probe() -> RemoteEndpoint:
        async with serving(app) as url:
            return await probe_endpoint(url)

    assert asyncio.run(probe()).server["version"] == "0.8.0.dev12+g1a2b"
    assert "version" not in probe_with(models).server  # a server without /version or /info
