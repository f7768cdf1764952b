/* Programs whose end an agent sees (stdout, stderr, exit status or signal):
 * tracebacks, SystemExit in its forms, atexit, threads, signals, stdin, a
 * warning, and what only the interpreter's end releases (a buffered file
 * left open, a __del__, a failing sys.excepthook). A cold run must end each
 * as `python3 -I -u main.py` does (test_process.c), and a warm run as a cold
 * one (test_warm.c): the launcher and the zygote end a program themselves
 * (src/core/exit_rule.py's finish), so these are what shows it is the same. */
#ifndef AJ_TEST_END_PROGRAMS_H
#define AJ_TEST_END_PROGRAMS_H

static const char *const end_programs[] = {
	"1/0\n",
	"def f():\n    raise ValueError('deep')\nf()\n",
	"syntax error here\n",
	"import sys\nprint('out')\nsys.exit(3)\n",
	"raise SystemExit('bye')\n",
	"import sys\nsys.exit(None)\n",
	"import sys\nsys.exit(300)\n",
	"import os, sys\nprint('x', flush=True)\nos._exit(7)\n",
	"import atexit\natexit.register(lambda: print('at exit'))\nprint('main')\n",
	"import threading, time\n"
	"threading.Thread(target=lambda: (time.sleep(0.2), print('thread'))).start()\n"
	"print('main ends')\n",
	"raise KeyboardInterrupt\n",
	"import os, signal\nos.kill(os.getpid(), signal.SIGTERM)\n",
	"import signal\nprint(signal.getsignal(signal.SIGPIPE), signal.getsignal(signal.SIGINT))\n",
	"print(input())\n",
	"import warnings\nwarnings.warn('careful')\n",
	"print(__builtins__.__name__, __loader__.name, __spec__)\n",
	/* What only the interpreter's end releases: a buffered file left
	 * open on a copy of stdout (its buffer written only when it is
	 * released), a __del__ (and one in a reference cycle), an atexit
	 * handler after a sys.exit. */
	"import os\nf = os.fdopen(os.dup(1), 'w')\nf.write('left buffered\\n')\n",
	"class A:\n    def __del__(self):\n        print('deleted')\na = A()\nprint('made')\n",
	"class A:\n    def __del__(self):\n        print('cycle deleted')\na = A()\na.me = a\n"
	"print('made')\n",
	"import sys\nsys.excepthook = lambda *a: 1 / 0\nraise ValueError('x')\n",
	"import atexit, sys\natexit.register(print, 'at exit')\nsys.exit(5)\n",
};
#define END_PROGRAMS (sizeof end_programs / sizeof end_programs[0])

#endif
