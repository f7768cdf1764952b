"""The run_python tool for a model: its definitions in the APIs' shapes,
the same words as `agentjail mcp` (one source, the library), and handlers
that turn a tool call into what the model reads."""
import base64
import json
import os
import subprocess
import time

import pytest

import agentjail
from conftest import ROOT, tier_options


def mcp_tools(*args):
    """tools/list of `agentjail mcp` run with args."""
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                    "clientInfo": {"name": "pytest", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]
    out = subprocess.run([os.path.join(ROOT, "build", "agentjail"), "mcp", *args],
                         input="".join(json.dumps(m) + "\n" for m in lines),
                         capture_output=True, text=True, timeout=60, check=True).stdout
    reply = [json.loads(line) for line in out.splitlines() if line.strip()][-1]
    return {t["name"]: t for t in reply["result"]["tools"]}


@pytest.mark.parametrize("session", [False, True])
def test_the_definition_is_the_mcp_servers(sandbox_for, session):
    sb = sandbox_for("process", timeout=7, cpu_sec=5, memory_mb=200)
    tool = sb.tool(session=session)
    args = ["--tier", "process", "--timeout", "7", "--cpu", "5", "--memory", "200"]
    served = mcp_tools(*args, *(["--sessions"] if session else []))["run_python"]
    assert tool.mcp() == served
    assert "7 s of wall-clock time" in tool.description
    assert "200 MiB of memory" in tool.description
    tool.close()


def test_api_shapes(sb):
    tool = sb.tool()
    schema = {"type": "object",
              "properties": {"code": {"type": "string",
                                      "description": "The complete Python program to run."}},
              "required": ["code"], "additionalProperties": False}
    assert tool.openai() == {"type": "function",
                             "function": {"name": "run_python",
                                          "description": tool.description,
                                          "parameters": schema, "strict": True}}
    assert tool.openai_responses()["parameters"] == schema
    assert tool.anthropic() == {"name": "run_python", "description": tool.description,
                                "input_schema": schema}
    # The definitions are copies: a caller's edit does not reach the tool.
    tool.anthropic()["input_schema"]["properties"].clear()
    assert tool.parameters == schema


def test_openai_call(sb):
    tool = sb.tool()
    call = {"id": "call_1", "type": "function",
            "function": {"name": "run_python", "arguments": json.dumps({"code": "print(6*7)"})}}
    msg = tool.handle_openai(call)
    assert msg["role"] == "tool" and msg["tool_call_id"] == "call_1"
    assert msg["content"].startswith("status: ok (exit code 0)\n--- stdout ---\n42\n")
    out = tool.handle_openai_response({"type": "function_call", "call_id": "c2",
                                       "name": "run_python",
                                       "arguments": '{"code": "import sys; sys.exit(4)"}'})
    assert out["type"] == "function_call_output" and out["call_id"] == "c2"
    assert out["output"].startswith("status: error (exit code 4)")


def test_anthropic_call_flags_errors(sb):
    tool = sb.tool()

    class Block:  # an SDK object, not a dict
        type, id, name = "tool_use", "toolu_1", "run_python"
        input = {"code": "raise ValueError('boom')"}
    r = tool.handle_anthropic(Block())
    assert r["type"] == "tool_result" and r["tool_use_id"] == "toolu_1"
    assert r["is_error"] is True
    assert "ValueError: boom" in r["content"][0]["text"]
    ok = tool.handle_anthropic({"id": "t2", "name": "run_python", "input": {"code": "1"}})
    assert ok["is_error"] is False


def test_bad_calls_are_results_the_model_reads(sb):
    tool = sb.tool()
    for args, words in [({"cod": "x"}, "unexpected argument 'cod'"),
                        ({"code": 5}, "'code' must be a string"),
                        ("not json", "not a JSON object"),
                        ({}, "'code' must be a string"),
                        ({"code": "print(1)", "timeout": 999}, "takes only 'code'")]:
        r = tool.call(args)
        assert r.is_error and r.execution is None
        assert r.text.startswith("Invalid arguments for run_python: ") and words in r.text
    r = tool.handle_openai({"id": "c", "function": {"name": "rm_rf", "arguments": "{}"}})
    assert r["content"] == "Unknown tool: rm_rf"
    r = tool.call({"code": "print\0(1)"})
    assert r.is_error and "NUL byte" in r.text


def test_session_tool_returns_images_and_keeps_state(sb):
    with sb.tool(session=True) as tool:
        assert tool.call({"code": "x = 20"}).text.startswith("status: ok")
        r = tool.handle_anthropic({
            "id": "t", "name": "run_python",
            "input": {"code": "import matplotlib.pyplot as plt\nplt.bar([1], [x])\nx * 2"}})
        assert "40" in r["content"][0]["text"]
        assert "--- images ---\nfigure-1.png (image/png" in r["content"][0]["text"]
        image = r["content"][1]
        assert image["type"] == "image" and image["source"]["media_type"] == "image/png"
        assert base64.b64decode(image["source"]["data"]).startswith(b"\x89PNG")


def test_session_tool_reopens_with_a_note(sandbox_for):
    sb = sandbox_for("process", session_idle_sec=1)
    with sb.tool(session=True) as tool:
        assert tool.call({"code": "x = 1"}).text.startswith("status: ok")
        time.sleep(2.5)  # the idle timeout passes; the reaper closes it
        r = tool.call({"code": "print('x' in globals())"})
        assert "note: a new session was started, because the previous one closed (it was idle" \
            in r.text
        assert "False" in r.text


def test_tool_on_a_given_session(sb):
    with sb.session() as s:
        s.run("y = 3")
        tool = agentjail.run_python_tool(s)
        assert tool.session and "persistent sandbox session" in tool.description
        assert "--- stdout ---\n3\n" in tool.call({"code": "print(y)"}).text
    with pytest.raises(TypeError):
        agentjail.run_python_tool(object())


def test_a_closed_sandbox_is_a_result_not_a_crash():
    sb = agentjail.Sandbox(tier="process", **tier_options("process"))
    tool = sb.tool()
    sb.close()
    r = tool.call({"code": "print(1)"})
    assert r.is_error and "closed" in r.text
