#!/usr/bin/env bash
# demo-session: one session, three calls, as an agent with a data task would
# make them: upload the user's CSV, load it, compute, chart. The chart comes
# back as a PNG and is saved where a person can open it. Run by `make demo`.
#
# It drives `agentjail repl --json` (one request a line, one answer a line)
# and prints the exchange as a transcript. The container tier with the
# datascience image when both are there, else the process tier (the host's
# Python, with Debian's numpy, pandas and matplotlib).
set -u
cd "$(dirname "$0")/.." || exit 1
AJ=build/agentjail
OUT=build/demo-session
[ -x "$AJ" ] || { echo "demo-session: $AJ is missing: run 'make all' first" >&2; exit 1; }
mkdir -p "$OUT"

TIER=(--tier process)
if "$AJ" image list 2>/dev/null | grep -q '^datascience ' &&
	echo 'import pandas, matplotlib' |
	"$AJ" run --tier container --image datascience --memory 1024 --timeout 60 - >/dev/null 2>&1; then
	TIER=(--tier container --image datascience)
fi

python3 - "$AJ" "$OUT" "${TIER[@]}" <<'PY'
import base64, json, subprocess, sys, textwrap

aj, out, tier = sys.argv[1], sys.argv[2], sys.argv[3:]
repl = subprocess.Popen([aj, "repl", "--json", "--memory", "1024", "--timeout", "60"] + tier,
                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

def ask(request):
    repl.stdin.write(json.dumps(request) + "\n")
    repl.stdin.flush()
    line = repl.stdout.readline()
    if not line:
        sys.exit("demo-session: agentjail repl ended early")
    return json.loads(line)

def show(title, body):
    print(title)
    print(textwrap.indent(body.rstrip("\n"), "    ") if body.strip() else "    (nothing)")

print("A session on the %s tier%s: state, files and charts across calls."
      % (tier[1], " (image %s)" % tier[3] if len(tier) > 3 else ""))
print()
with open("examples/data/sales.csv", "rb") as f:
    data = f.read()
answer = ask({"put": "sales.csv", "base64": base64.b64encode(data).decode()})
print("upload sales.csv (%d bytes) -> %s" % (len(data), answer))
print()

cells = [
    "import pandas as pd\n"
    "df = pd.read_csv('sales.csv', parse_dates=['date'])\n"
    "df['revenue'] = df.units * df.unit_price\n"
    "print(df.shape, 'rows x columns')\n"
    "df.head(3)",
    "monthly = df.groupby(df.date.dt.strftime('%Y-%m')).revenue.sum()\n"
    "best = df.groupby('region').revenue.sum().idxmax()\n"
    "print('best region:', best)\n"
    "monthly.round(0)",
    "import matplotlib.pyplot as plt\n"
    "ax = monthly.plot(kind='bar', color='#3b7dd8', title='Revenue by month')\n"
    "ax.set_ylabel('revenue')\n"
    "plt.tight_layout()\n"
    "monthly.to_csv('outputs/monthly.csv')\n"
    "print('chart drawn; totals written to outputs/monthly.csv')",
]
for n, code in enumerate(cells, 1):
    r = ask({"run": code})
    show("In [%d]:" % n, code)
    show("Out [%d]: status %s, %.0f ms" % (n, r["status"], r["wall_ms"]),
         r["stdout"] + r["stderr"])
    for i, im in enumerate(r.get("images") or [], 1):
        path = "%s/cell%d-%s" % (out, n, im["name"].replace("/", "-"))
        with open(path, "wb") as f:
            f.write(base64.b64decode(im["data"]))
        print("    image %s (%s, %d bytes) saved as %s" % (im["name"], im["mime"], im["bytes"], path))
    print()
got = ask({"get": "outputs/monthly.csv"})
if "base64" in got:
    with open(out + "/monthly.csv", "wb") as f:
        f.write(base64.b64decode(got["base64"]))
    print("download outputs/monthly.csv -> %s/monthly.csv" % out)
else:
    print("download outputs/monthly.csv ->", got)
print("workspace:", ", ".join(e["name"] for e in ask({"list": ""})["entries"]))
repl.stdin.close()
repl.wait()
PY
