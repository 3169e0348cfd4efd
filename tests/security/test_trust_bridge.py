"""Issue 23 item 9: a rubric leaf cannot lift its model-call cap or its max_tokens from inside the sandbox.

The cap and the clamp are enforced by the judge's model bridge (the host side), which charges each call
to the leaf the driver announced, not to anything the leaf's process counts or claims.
"""

from __future__ import annotations

import textwrap

from pptarena.models import ModelHub
from pptarena.plugins.judges.rubric.execute import (
    MAX_CALLS_PER_LEAF,
    MAX_TOKENS_PER_CALL,
    LeafRun,
    ModelBridge,
    run_function_leaves,
)
from tests.support.stub_llm_server import Reply

NO_DECKS = {
    "original_ppt_path": "/nonexistent/a.pptx",
    "modified_ppt_path": "/nonexistent/b.pptx",
    "ppt_diff": None,
    "screenshots": {},
}

# The attack: reset the leaf's own call counter before every call, ask for 100000 tokens, and also
# talk to the bridge's socket directly, claiming another leaf's id and trying to announce leaves.
GREEDY = """
def compute_score():
    import json, socket
    proxy = llm_call.__globals__["_proxy"]
    ok = refused = 0
    for i in range(150):
        proxy.calls = 0
        try:
            llm_call(f"call {i}", max_tokens=100000)
            ok += 1
        except Exception:
            refused += 1
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(proxy.path)
    f = sock.makefile("rb")
    answers = []
    for msg in [{"control": "hello"}, {"control": "start", "leaf": "fresh"}] + [
        {"kind": "llm", "prompt": f"forged {i}", "leaf": "honest", "max_tokens": 100000} for i in range(50)
    ]:
        sock.sendall(json.dumps(msg).encode() + b"\\n")
        answers.append(json.loads(f.readline()).get("ok"))
    return json.dumps({"ok": ok, "refused": refused, "direct_ok": sum(map(bool, answers))}), 0
"""

HONEST = textwrap.dedent(
    """
    def compute_score():
        replies = [llm_call(f"honest {i}", max_tokens=50) for i in range(3)]
        return "|".join(replies), 1
    """
)


def test_leaf_that_resets_its_counter_and_forges_ids_gets_only_its_cap(openai_backend, llm_server):
    import json

    llm_server.default = Reply("yes")
    client = ModelHub({"openai": openai_backend()}).factory()("openai/judge")
    bridge = ModelBridge(client, "openai/judge")
    records = run_function_leaves(
        [{"id": "greedy", "code": GREEDY}, {"id": "honest", "code": HONEST}], NO_DECKS, bridge, LeafRun()
    )
    assert "error" not in records["greedy"], records["greedy"]
    seen = json.loads(records["greedy"]["reason"])
    # 20 answered calls in all (through llm_call or its own socket), everything else refused by the judge
    assert seen["ok"] + seen["direct_ok"] == MAX_CALLS_PER_LEAF
    assert bridge.refused["greedy"] == 150 + 50 - MAX_CALLS_PER_LEAF
    # the honest leaf still has its own budget: the forged "honest" calls were charged to the greedy leaf
    assert records["honest"]["score"] == 1.0 and records["honest"]["reason"] == "yes|yes|yes"
    bodies = [r.body for r in llm_server.requests]
    assert len(bodies) == MAX_CALLS_PER_LEAF + 3
    greedy = [b for b in bodies if "honest" not in json.dumps(b["messages"])]
    assert len(greedy) == MAX_CALLS_PER_LEAF
    # the provider never saw 100000: the bridge clamped it (the field is max_tokens or, for newer
    # models, max_completion_tokens, whichever the backend sends)
    asked = [b.get("max_tokens") or b.get("max_completion_tokens") for b in greedy]
    assert asked == [MAX_TOKENS_PER_CALL] * MAX_CALLS_PER_LEAF
    assert all(c.params.get("max_tokens") == MAX_TOKENS_PER_CALL for c in bridge.calls if c.leaf == "greedy")
    assert [c.leaf for c in bridge.calls].count("honest") == 3
