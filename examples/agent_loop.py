#!/usr/bin/env python3
"""A minimal agent loop: the model writes Python, a sandbox runs it, the model
reads the result and carries on. There is no model here, so FakeModel replays
the assistant turns of a recorded conversation; the tool calls in them run for
real, in the sandbox, and the results printed are this run's own.

    python3 examples/agent_loop.py [--tier process|container|microvm|docker|gvisor]
        [--image NAME] [--api anthropic|openai] [--transcript FILE] [--session]

The shape is the seed article's: the model's code goes to a sandbox object
with a run(code) method, and any class with that method will do. Here that
object is agentjail's Sandbox, reached through sandbox.tool(), which adds the
tool's definition and turns each Execution into the text (and error flag) the
model reads. The loop never names a tier: the tier is the deployer's choice
(--tier), and swapping it changes nothing below.

Exit status: 0 when the transcript was replayed; 1 when the tier cannot run
on this machine (or agentjail cannot be imported); 2 on a usage error (a bad
option, a missing or malformed transcript)."""
import argparse
import json
import os
import sys
import textwrap

HERE = os.path.dirname(os.path.abspath(__file__))
_SOURCE_TREE = os.path.join(os.path.dirname(HERE), "python")
if os.path.isfile(os.path.join(_SOURCE_TREE, "agentjail", "__init__.py")):
    sys.path.insert(0, _SOURCE_TREE)  # run from a source tree, no install needed
# ...otherwise an installed agentjail (pip install ./python) is imported.
try:
    from agentjail import AgentjailError, ConfigError, Sandbox, SandboxUnavailable
except ImportError as e:
    sys.exit(f"agent_loop.py: cannot import agentjail ({e}); run `make` in the agentjail "
             "source tree, or `pip install ./python`")

TIERS = ("process", "container", "microvm", "docker", "gvisor")
APIS = ("anthropic", "openai")
MAX_TURNS = 10  # a real loop's guard against a model that never stops calling tools


class UsageError(Exception):
    pass


def field(obj, key, default=None):
    """A field of a message or block, whether a dict (the transcript) or an
    SDK object (a real client's response)."""
    if isinstance(obj, dict):
        return obj.get(key, default)
    return getattr(obj, key, default)


# ---- the model ----

class FakeModel:
    """Stands in for the model: returns the transcript's assistant turns, one
    per call, in order, and None when they run out.

    This is the seam where a real client goes: a class with the same
    create(messages, tools). With Anthropic's SDK:

        class AnthropicModel:
            def __init__(self, system):
                self.client, self.system = anthropic.Anthropic(), system

            def create(self, messages, tools):
                response = self.client.messages.create(
                    model="claude-sonnet-4-5", max_tokens=1024, system=self.system,
                    tools=tools, messages=messages)  # tools == [tool.anthropic()]
                return {"role": "assistant", "content": response.content}

    With OpenAI's:

        class OpenAIModel:
            def __init__(self):
                self.client = openai.OpenAI()

            def create(self, messages, tools):
                response = self.client.chat.completions.create(
                    model="gpt-4o", messages=messages, tools=tools)  # [tool.openai()]
                return response.choices[0].message

    Everything else in this file stays as it is."""

    def __init__(self, turns):
        self._turns = list(turns)

    def create(self, messages, tools):
        return self._turns.pop(0) if self._turns else None


# ---- the two APIs' message shapes ----

class AnthropicAPI:
    name = "anthropic"

    @staticmethod
    def definition(tool):
        return tool.anthropic()

    @staticmethod
    def split(messages):
        """The conversation's opening (before the first assistant turn), the
        assistant turns, and the recorded tool results by call id."""
        first = next((i for i, m in enumerate(messages) if m.get("role") == "assistant"), None)
        if first is None:
            raise UsageError("no assistant turn to replay")
        recorded = {}
        for m in messages:
            if m.get("role") == "user" and isinstance(m.get("content"), list):
                for b in m["content"]:
                    if isinstance(b, dict) and b.get("type") == "tool_result":
                        recorded[b.get("tool_use_id")] = b
        for m in messages[first:]:
            if m.get("role") == "assistant" and not isinstance(m.get("content"), (list, str)):
                raise UsageError("an assistant turn's content is neither a list of blocks nor text")
        turns = [m for m in messages[first:] if m.get("role") == "assistant"]
        return messages[:first], turns, recorded

    @staticmethod
    def text(turn):
        content = field(turn, "content")
        if isinstance(content, str):
            return content
        return "\n".join(field(b, "text") for b in content if field(b, "type") == "text")

    @staticmethod
    def calls(turn):
        content = field(turn, "content")
        return [] if isinstance(content, str) else [b for b in content
                                                    if field(b, "type") == "tool_use"]

    @staticmethod
    def call_id(call):
        return field(call, "id")

    @staticmethod
    def code(call):
        return field(field(call, "input", {}), "code")

    @staticmethod
    def handle(tool, call):
        result = tool.handle_anthropic(call)
        text = "".join(b["text"] for b in result["content"] if b["type"] == "text")
        return result, text, result["is_error"]

    @staticmethod
    def append(messages, turn, results):
        messages.append(turn)
        if results:  # every tool_result of a turn goes back in one user message
            messages.append({"role": "user", "content": results})

    @staticmethod
    def recorded_text(block):
        content = block.get("content")
        if isinstance(content, str):
            return content
        return "".join(b.get("text", "") for b in content or [] if b.get("type") == "text")


class OpenAIAPI:
    name = "openai"

    @staticmethod
    def definition(tool):
        return tool.openai()

    @staticmethod
    def split(messages):
        first = next((i for i, m in enumerate(messages) if m.get("role") == "assistant"), None)
        if first is None:
            raise UsageError("no assistant turn to replay")
        recorded = {m.get("tool_call_id"): m for m in messages if m.get("role") == "tool"}
        turns = [m for m in messages[first:] if m.get("role") == "assistant"]
        return messages[:first], turns, recorded

    @staticmethod
    def text(turn):
        return field(turn, "content") or ""

    @staticmethod
    def calls(turn):
        return field(turn, "tool_calls") or []

    @staticmethod
    def call_id(call):
        return field(call, "id")

    @staticmethod
    def code(call):
        try:
            return json.loads(field(field(call, "function", {}), "arguments", "{}")).get("code")
        except (ValueError, AttributeError):
            return None  # the tool says what is wrong with the arguments

    @staticmethod
    def handle(tool, call):
        result = tool.handle_openai(call)
        # A chat "tool" message is text only: no error flag travels with it;
        # the model reads the status line at the top of the text.
        return result, result["content"], None

    @staticmethod
    def append(messages, turn, results):
        messages.append(turn)
        messages.extend(results)  # one "tool" message per call, after the turn

    @staticmethod
    def recorded_text(message):
        return message.get("content") or ""


API = {"anthropic": AnthropicAPI, "openai": OpenAIAPI}


# ---- printing ----

def indent(text, prefix="    | "):
    return textwrap.indent(text.rstrip("\n") or "(empty)", prefix, lambda line: True)


def prose(text, prefix="  ", width=96):
    """A message's words, each paragraph wrapped for the screen."""
    return "\n".join(textwrap.fill(line, width, initial_indent=prefix, subsequent_indent=prefix)
                     if line else "" for line in text.splitlines())


def abbreviated(definition, width=72):
    """The tool definition with its long description cut, for the screen."""
    d = json.loads(json.dumps(definition))
    holder = d.get("function", d)
    desc = holder.get("description", "")
    if len(desc) > width:
        holder["description"] = desc[:width - 3] + "..."
    return json.dumps(d, indent=2)


def status_line(text):
    return text.split("\n", 1)[0]


# ---- the loop ----

def agent_loop(api, tool, model, messages, recorded):
    """Asks the model for a turn, runs its tool calls, hands the results
    back, until a turn calls no tool. Returns the number of tool calls."""
    tools = [api.definition(tool)]
    ncalls = 0
    for turn_no in range(1, MAX_TURNS + 1):
        turn = model.create(messages, tools)
        if turn is None:
            print("\n(the transcript ended while the model was still calling tools)")
            break
        print(f"\n=== assistant, turn {turn_no} ===")
        text = api.text(turn)
        print(prose(text) if text else "  (no text: tool calls only)")
        results = []
        for call in api.calls(turn):
            ncalls += 1
            print(f"\n--- tool call {ncalls}: {api.call_id(call)} ---")
            code = api.code(call)
            print(indent(code) if isinstance(code, str) else "    (no code argument)")
            message, result_text, is_error = api.handle(tool, call)
            results.append(message)
            print("--- tool result (what the model reads) ---")
            print(indent(result_text))
            if is_error is None:
                print(f"    is_error: n/a (a chat tool message is text only; the model reads "
                      f"{status_line(result_text)!r})")
            else:
                print(f"    is_error: {str(is_error).lower()}")
            before = recorded.get(api.call_id(call))
            then = status_line(api.recorded_text(before)) if before is not None else None
            if then is not None and then != status_line(result_text):
                print(f"    note: when recorded this call gave {then!r}; the model's next "
                      "turn was written against that")
        api.append(messages, turn, results)
        if not results:
            break  # a turn without tool calls is the model's answer
    else:
        print(f"\n(stopped after {MAX_TURNS} turns)")
    return ncalls


def load_transcript(path, api_name):
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except OSError as e:
        raise UsageError(f"cannot read the transcript {path}: {e.strerror or e}")
    except ValueError as e:
        raise UsageError(f"the transcript {path} is not valid JSON: {e}")
    if isinstance(doc, list):
        doc = {"messages": doc}
    if not isinstance(doc, dict) or not isinstance(doc.get("messages"), list) \
            or not all(isinstance(m, dict) for m in doc["messages"]):
        raise UsageError(f"the transcript {path} has no list of messages "
                         '(expected {"messages": [...]} or a list)')
    shape = doc.get("api")
    if shape is not None and shape != api_name:
        raise UsageError(f"the transcript {path} is a conversation of the {shape} API, "
                         f"not {api_name}; pass --api {shape}")
    return doc


def parse_args(argv):
    class Parser(argparse.ArgumentParser):
        def error(self, message):
            self.print_usage(sys.stderr)
            print(f"{self.prog}: error: {message}", file=sys.stderr)
            sys.exit(2)

    p = Parser(description="Replay a recorded agent conversation, running its tool calls "
                           "in an agentjail sandbox.")
    p.add_argument("--tier", choices=TIERS, default="process",
                   help="the sandbox tier (default: process)")
    p.add_argument("--image", help="the image, for the container, microvm and docker tiers "
                                   "(a name under $AGENTJAIL_IMAGES, or a path)")
    p.add_argument("--api", choices=APIS, default="anthropic",
                   help="which API's message shapes to speak (default: anthropic)")
    p.add_argument("--transcript", help="the recorded conversation "
                                        "(default: examples/transcripts/API.json)")
    p.add_argument("--session", action="store_true",
                   help="one session for the whole conversation: state persists across calls")
    args = p.parse_args(argv)
    if args.transcript is None:
        args.transcript = os.path.join(HERE, "transcripts", f"{args.api}.json")
    return args


def main(argv=None):
    args = parse_args(argv)
    api = API[args.api]
    try:
        doc = load_transcript(args.transcript, api.name)
        try:
            opening, turns, recorded = api.split(doc["messages"])
        except UsageError as e:
            raise UsageError(f"the transcript {args.transcript}: {e}")
    except UsageError as e:
        print(f"agent_loop.py: {e}", file=sys.stderr)
        return 2

    try:
        sandbox = Sandbox(tier=args.tier, image=args.image)
    except ConfigError as e:
        print(f"agent_loop.py: {e}", file=sys.stderr)
        return 2
    except SandboxUnavailable as e:
        print(f"agent_loop.py: {e}", file=sys.stderr)
        return 1

    with sandbox, sandbox.tool(session=args.session) as tool:
        mode = "one session for the conversation" if tool.session else "a fresh sandbox per call"
        print(f"sandbox: {sandbox!r}, {mode}")
        print(f"transcript: {os.path.relpath(args.transcript)} ({api.name} shape, "
              f"{len(turns)} assistant turns)")
        print(f"\ntool definition sent to the model ({api.name}, description abbreviated):")
        print(indent(abbreviated(api.definition(tool)), "  "))

        system = doc.get("system")
        if system:
            print("\n=== system ===")
            print(prose(system))
        for m in opening:
            print(f"\n=== {m.get('role')} ===")
            content = m.get("content")
            print(prose(content if isinstance(content, str) else json.dumps(content)))

        messages = list(opening)
        model = FakeModel(turns)
        try:
            ncalls = agent_loop(api, tool, model, messages, recorded)
        except AgentjailError as e:  # the tool reports the code's failures; this is the sandbox's
            print(f"agent_loop.py: the sandbox failed: {e}", file=sys.stderr)
            return 1

    print(f"\nreplayed {len(turns)} assistant turns, {ncalls} tool calls, on the {sandbox.tier} "
          "tier. The model's words are the recording's; the tool results above are this run's.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
