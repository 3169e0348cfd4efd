"""Overhead of the shared model-client layer (not run by CI).

Measures, per call: a scripted backend through ModelClient (retry/deadline/
semaphore/accounting), the same with the sqlite cache hit, and the OpenAI SDK
round trip to the loopback stub server with and without a cache hit.

    python benchmarks/bench_backends.py [calls]
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pydantic import SecretStr  # noqa: E402

from pptarena.models import ImagePart, Message, ModelClient  # noqa: E402
from pptarena.plugins.backends.openai import OpenAIBackend, OpenAIOptions  # noqa: E402
from pptarena.plugins.backends.scripted import ScriptedBackend, ScriptedOptions  # noqa: E402
from pptarena.types import ComponentContext  # noqa: E402
from tests.support.stub_llm_server import StubLLMServer  # noqa: E402


def per_call_ms(client: ModelClient, messages_for, n: int) -> float:
    started = time.perf_counter()
    for i in range(n):
        client.complete(messages_for(i))
    return (time.perf_counter() - started) * 1000 / n


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    image = ImagePart(b"\x89PNG" + bytes(200_000))  # a ~200 KB slide render
    tmp = Path(tempfile.mkdtemp())
    ctx = ComponentContext(cache_dir=tmp, model=lambda ref: None)

    def fresh(i):
        return [Message.system("sys"), Message.user(f"prompt {i}", image)]

    def same(i):
        return [Message.system("sys"), Message.user("prompt", image)]

    scripted = ScriptedBackend(ScriptedOptions(responses=["ok"], on_exhausted="cycle"), ctx)
    print(
        "scripted via ModelClient:        "
        f"{per_call_ms(ModelClient(scripted, 's', 'm'), fresh, n):7.3f} ms/call"
    )
    cached = ScriptedBackend(
        ScriptedOptions(responses=["ok"], on_exhausted="cycle", cache=tmp / "s.sqlite"), ctx
    )
    client = ModelClient(cached, "s", "m")
    client.complete(same(0))
    print(f"scripted, cache hit:             {per_call_ms(client, same, n):7.3f} ms/call")
    with StubLLMServer() as server:
        backend = OpenAIBackend(
            OpenAIOptions(base_url=server.openai_base_url, api_key=SecretStr("sk-bench")), ctx
        )
        print(
            "openai SDK -> loopback stub:     "
            f"{per_call_ms(ModelClient(backend, 'openai', 'm'), fresh, n):7.3f} ms/call"
        )
        backend_c = OpenAIBackend(
            OpenAIOptions(
                base_url=server.openai_base_url, api_key=SecretStr("sk-bench"), cache=tmp / "o.sqlite"
            ),
            ctx,
        )
        client = ModelClient(backend_c, "openai", "m")
        client.complete(same(0))
        before = len(server.requests)
        print(f"openai, cache hit:               {per_call_ms(client, same, n):7.3f} ms/call")
        assert len(server.requests) == before


if __name__ == "__main__":
    main()
