"""Execution.text() without the native library (a remote-only install):
the words of src/api/tool.c's result_text, which the MCP server and the
local tool send. tests/serve/test_remote_text.py renders a corpus of results
both ways and requires the same text, so a change to the C words that is not
made here fails the tests.

Its input is already UTF-8: a remote run's output came through serve, which
repaired it (invalid bytes as U+FFFD) before sending it."""


def _c_str(v):
    # printf's "%s" of a NULL pointer, which is what the C prints for a
    # field the log lacks.
    return "(null)" if v is None else str(v)


def _egress(log):
    out = []
    if not isinstance(log, dict):
        return out
    limit = log.get("limit")
    if isinstance(limit, str):
        out.append(f"\negress: {limit}")
    shown = 0
    conns = log.get("connections")
    for c in conns if isinstance(conns, list) else []:
        failure = c.get("failure") if isinstance(c.get("failure"), str) else None
        if (c.get("allowed") is True and not failure) or shown == 3:
            continue
        port = c.get("port")
        port = port if isinstance(port, int) and not isinstance(port, bool) else 0
        host = c.get("host") if isinstance(c.get("host"), str) else None
        reason = c.get("reason") if isinstance(c.get("reason"), str) else None
        if failure:
            out.append(f"\negress: {_c_str(host)}:{port} was allowed but not reached: "
                       f"{_c_str(reason)}")
        else:
            out.append(f"\negress: refused {_c_str(host)}:{port}: {_c_str(reason)}")
        shown += 1
    return out


def _stream(label, data, truncated):
    head = f"\n--- {label}{' (cut at the output limit)' if truncated else ''} ---\n"
    text = data.decode("utf-8", "replace")
    return head + (text if data else "(empty)")


def result_text(ex):
    status = ex.status.value
    if ex.exit_code is not None:
        parts = [f"status: {status} (exit code {ex.exit_code})"]
    elif ex.signal:
        parts = [f"status: {status} (signal {ex.signal})"]
    else:
        parts = [f"status: {status}"]
    if ex.message is not None:
        parts.append("\n" + ex.message)
    parts += _egress(ex.egress)
    parts.append(_stream("stdout", ex.stdout_bytes, ex.stdout_truncated))
    parts.append(_stream("stderr", ex.stderr_bytes, ex.stderr_truncated))
    if ex.images or ex.images_dropped:
        parts.append("\n--- images ---")
        for im in ex.images:
            parts.append(f"\n{im.name[:200]} ({im.mime}, {len(im.data)} bytes)")
        if ex.images_dropped:
            parts.append(f"\n{ex.images_dropped} more not returned (over the number or size "
                         f"allowed per call)")
    return "".join(parts)
