"""``mcp_servers`` entries: what an agent table may list, and what a row keeps of each."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from pptarena.mcp import McpServerSpec, server_record
from pptarena.mcp.servers import MAX_SERVERS, check_server_list


def test_a_server_entry_is_checked_like_the_attack_it_could_be():
    for bad_name in ["../x", "", "a b", "x" * 65, "-lead"]:
        with pytest.raises(ValidationError):
            McpServerSpec(name=bad_name, command=["srv"])
    with pytest.raises(ValidationError):
        McpServerSpec(name="ok", command=[])
    with pytest.raises(ValidationError):
        McpServerSpec(name="ok", command=["  "])
    with pytest.raises(ValidationError):
        McpServerSpec(name="ok", command=["srv", "a\0b"])
    with pytest.raises(ValidationError):
        McpServerSpec(name="ok", command=["srv"], cwd="/etc")  # unknown keys are refused


def test_the_list_is_capped_and_names_are_unique():
    one = McpServerSpec(name="a", command=["srv"])
    assert check_server_list([one]) == [one]
    with pytest.raises(ValueError, match="names used twice: a"):
        check_server_list([one, McpServerSpec(name="a", command=["other"])])
    many = [McpServerSpec(name=f"s{i}", command=["srv"]) for i in range(MAX_SERVERS + 1)]
    with pytest.raises(ValueError, match=f"at most {MAX_SERVERS}"):
        check_server_list(many)


def test_the_row_record_hashes_env_names_never_their_values():
    a = McpServerSpec(name="pptx", command=["srv", "--x"], env={"TOKEN": "secret-1"}, version="1.2")
    b = McpServerSpec(name="pptx", command=["srv", "--x"], env={"TOKEN": "secret-2"}, version="1.2")
    c = McpServerSpec(name="pptx", command=["srv", "--y"], env={"TOKEN": "secret-1"}, version="1.2")
    ra, rb, rc = server_record(a), server_record(b), server_record(c)
    assert ra == rb  # a changed secret value is not a different server
    assert ra["command_sha"] != rc["command_sha"]
    assert ra["name"] == "pptx" and ra["version"] == "1.2"
    assert "secret" not in repr(ra)
