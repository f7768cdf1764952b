"""The run_python tool for a model: its definitions in the APIs' shapes,
the same words as `agentjail mcp` (one source, the library), and handlers
that turn a tool call into what the model reads."""
import base64
import json
import os
import re
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


def test_session_tool_returns_images_and_keeps_state(sandbox_for):
    # matplotlib's first import builds its font cache: limits that only
    # catch a hang, not the suite's 10 s wall and 5 s CPU.
    sb = sandbox_for("process", timeout=120, cpu_sec=100, memory_mb=512)
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
        # The idle timeout passes and the reaper closes it: waited for, as
        # the event it is (a busy machine's reaper may come late).
        deadline = time.monotonic() + 60
        while tool._owned.closed_reason is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert "idle" in tool._owned.closed_reason
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


NOTABLE = ["numpy", "pandas", "scipy", "matplotlib", "sklearn", "polars", "requests"]


def importable(sb, modules):
    """Which of modules the sandbox's own interpreter can import: the
    truth the description is judged against."""
    ex = sb.run("import importlib.util\n"
                f"print([m for m in {modules!r} if importlib.util.find_spec(m)])")
    assert ex.ok, ex.stderr
    return set(eval(ex.stdout))


@pytest.mark.parametrize("tier,image", [("process", None), ("container", "test"),
                                        ("container", "test-ds")])
def test_the_description_names_what_the_sandbox_has_and_nothing_it_lacks(sandbox_for, tier, image):
    opts = tier_options(tier, **({"image": image} if image else {}))
    opts.pop("timeout"), opts.pop("cpu_sec")
    why = agentjail.check(tier, **opts)[tier]
    if why:
        pytest.skip(f"the {tier} tier cannot run here: {why}")
    sb = sandbox_for(tier, **({"image": image} if image else {}))
    has = importable(sb, NOTABLE)
    for session in (False, True):
        desc = sb.tool(session=session).description
        named = re.search(r"Installed besides the Python standard library: (.*?)\. ", desc)
        named = {n.split(" ")[0] for n in named.group(1).split(", ")} if named else set()
        assert named & set(NOTABLE) == has, desc
        if not has:
            assert "Only the Python standard library is available" in desc
        assert "no network" in desc


def test_a_session_tool_offers_the_file_tools_it_names(sb):
    plain = sb.tool()
    assert plain.names == ["run_python"]
    with sb.tool(session=True) as tool:
        assert tool.names == ["run_python", "upload_file", "download_file", "list_files"]
        served = mcp_tools("--tier", "process", "--sessions")
        assert [t["name"] for t in tool.mcp_tools()] == list(served)
        assert tool.mcp_tools()[1:] == [served[n] for n in tool.names[1:]]
        # No description names a tool that is not offered.
        for defs, offered in ((plain.mcp_tools(), plain.names), (tool.mcp_tools(), tool.names)):
            for d in defs:
                for other in ("upload_file", "download_file", "list_files"):
                    assert other not in d["description"] or other in offered
        assert [t["function"]["name"] for t in tool.openai_tools()] == tool.names
        assert [t["name"] for t in tool.openai_responses_tools()] == tool.names
        assert [t["name"] for t in tool.anthropic_tools()] == tool.names
        assert tool.anthropic_tools()[1]["input_schema"]["required"] == ["path", "content"]

        up = tool.handle_openai({"id": "c1", "function": {
            "name": "upload_file", "arguments": json.dumps({"path": "d/in.txt", "content": "hi"})}})
        assert up == {"role": "tool", "tool_call_id": "c1", "content": "wrote d/in.txt (2 bytes)"}
        r = tool.call({"code": "print(open('d/in.txt').read())"})
        assert "--- stdout ---\nhi\n" in r.text
        r = tool.handle("list_files", {"path": "d"})
        assert not r.is_error and "in.txt  (2 bytes)" in r.text
        r = tool.handle_anthropic({"id": "t", "name": "download_file", "input": {"path": "d/in.txt"}})
        assert r["is_error"] is False and r["content"][0]["text"] == "hi"
        # What the library refuses, and arguments outside the schema: words.
        r = tool.handle("download_file", {"path": "../../etc/passwd"})
        assert r.is_error and "'..' is not allowed" in r.text
        r = tool.handle("upload_file", {"path": "a"})
        assert r.is_error and "'content' is required" in r.text
        r = tool.handle("rm_rf", {})
        assert r.is_error and r.text == "Unknown tool: rm_rf"
    # Without a session the file tools are not there to call.
    assert plain.handle("list_files", {}).text == "Unknown tool: list_files"


PLOT = "import matplotlib.pyplot as plt\nplt.plot([1, 2], [3, 4])\n"


def png(data_url):
    head, b64 = data_url.split(",", 1)
    assert head == "data:image/png;base64"
    return base64.b64decode(b64)


def test_openai_handlers_return_images_in_shapes_the_apis_take(sb):
    with sb.tool(session=True) as tool:
        if not tool.call({"code": "import matplotlib"}).execution.ok:
            pytest.skip("matplotlib is not installed for the sandbox's interpreter")
        calls = [{"id": "a", "function": {"name": "run_python", "arguments": json.dumps({"code": PLOT})}},
                 {"id": "b", "function": {"name": "run_python", "arguments": '{"code": "print(2)"}'}}]
        msgs = tool.handle_openai_calls(calls)
        # Chat completions: the tool messages first, in order, then one
        # user message with the image as an image_url part.
        assert [m["role"] for m in msgs] == ["tool", "tool", "user"]
        assert [m["tool_call_id"] for m in msgs[:2]] == ["a", "b"]
        assert "figure-1.png (image/png" in msgs[0]["content"]
        parts = msgs[2]["content"]
        assert parts[0] == {"type": "text", "text": "Image figure-1.png from tool call a:"}
        assert parts[1]["type"] == "image_url"
        assert png(parts[1]["image_url"]["url"]).startswith(b"\x89PNG")
        assert tool.handle_openai_calls(calls[1:]) == [
            {"role": "tool", "tool_call_id": "b", "content": tool.call({"code": "print(2)"}).text}]
        # The Responses API: the image inside the function_call_output.
        out = tool.handle_openai_response({"type": "function_call", "call_id": "c",
                                           "name": "run_python",
                                           "arguments": json.dumps({"code": PLOT})})
        assert out["type"] == "function_call_output" and out["call_id"] == "c"
        assert out["output"][0]["type"] == "input_text"
        assert out["output"][0]["text"].startswith("status: ok")
        assert out["output"][1]["type"] == "input_image"
        assert png(out["output"][1]["image_url"]).startswith(b"\x89PNG")
        # Anthropic: an image block in the tool_result.
        r = tool.handle_anthropic({"id": "t", "name": "run_python", "input": {"code": PLOT}})
        assert r["content"][1]["type"] == "image"
        assert base64.b64decode(r["content"][1]["source"]["data"]).startswith(b"\x89PNG")
