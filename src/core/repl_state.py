# A session's state as one file, for a checkpoint, a pause and a fork: the
# workspace's files and what the cells' namespaces hold. Put in front of
# src/core/repl.py at build time (tools/c_string.py), whose ops "save",
# "load" and "state_write" call it.
#
# It runs inside the sandbox, and so does its reverse: the host never
# unpickles what a sandbox wrote. The host only carries the bytes (and
# authenticates them, src/api/session_checkpoint.c); a file a cell forged
# is loaded by another sandbox of the same deployer's limits, which is all
# a cell can already do to itself.
#
# The file (STATE_FILE in the workspace while it is made or read) is a
# stream of pickles (the standard library's, for the frame):
#   {"v": 1, "python": "3.11.2"}
#   ("d", relpath, mode) | ("f", relpath, mode, bytes) | ("l", relpath, target)
#   ...
#   ("ns",), then the namespaces: one pickle of {key: {name: value}} (key
#       "main", or "ctx:" + a context's name; StatePickler below), then
#       ("left_out", [[context, name, why]]): the values that could not be
#       written, each tried alone.

STATE_FILE = ".agentjail-state"
STATE_VERSION = 1


def state_namespaces(state):
    """{key: the namespace dict} of every namespace the session has."""
    names = {"main": state["namespace"]}
    for name, ns in state["contexts"].items():
        names["ctx:" + name] = ns
    return names


# Cells' functions and classes are written by value, with the standard
# library's pickle only: a function as its code (marshal), defaults,
# closure and namespace; a class as its name, bases and attributes. (dill
# would do this too, but it is not in every image, and importing it makes
# the session's interpreter 7 MB larger: under gVisor, which copies a
# process's memory on fork, a fork bomb in a restored session then passed
# the sandbox's memory and ended it.) What is neither, and would be
# written as a reference to __main__ (where the new session has no such
# name yet), is refused here and so left out by name.
def state_pickler_class():
    import importlib
    import marshal
    import pickle
    import sys
    import types

    def by_name(module, name):
        return (getattr, (module, name))

    kinds = {types.FunctionType: "FunctionType", types.CellType: "CellType",
             types.CodeType: "CodeType", types.MappingProxyType: "MappingProxyType"}
    # A dataclass's fields hold these markers, which it tells by identity.
    import dataclasses

    markers = {id(getattr(dataclasses, n)): n for n in
               ("MISSING", "KW_ONLY", "_FIELD", "_FIELD_CLASSVAR", "_FIELD_INITVAR")
               if hasattr(dataclasses, n)}

    class StatePickler(pickle.Pickler):
        """A namespace is written as a name (persistent_id): loaded, the
        functions of a namespace are functions of the new session's, not
        of a copy of it."""

        def __init__(self, f, names):
            super().__init__(f, protocol=4)
            self.ids = {id(ns): key for key, ns in names.items()}
            # A module's globals, which a function made by a library for
            # a cell's class (a dataclass's methods) may have: by name.
            self.modules = {id(m.__dict__): "module:" + name
                            for name, m in list(sys.modules.items())
                            if type(m) is types.ModuleType and name != "__main__"}

        def persistent_id(self, obj):
            if type(obj) is not dict:
                return None
            return self.ids.get(id(obj)) or self.modules.get(id(obj))

        def reducer_override(self, obj):
            kind = type(obj)
            if kind is types.ModuleType and sys.modules.get(obj.__name__) is obj:
                # By name: imported again where it is loaded. A package
                # with the submodules it had loaded (`import urllib.request`
                # leaves `urllib` in the namespace, and code reads
                # urllib.request): __import__'s fromlist imports them.
                name = obj.__name__
                if not hasattr(obj, "__path__"):
                    return (importlib.import_module, (name,))
                subs = sorted({k[len(name) + 1:] for k in list(sys.modules)
                               if k.startswith(name + ".") and
                               "." not in k[len(name) + 1:]})
                return (__import__, (name, None, None, subs, 0))
            if kind is type and obj in kinds:
                return by_name(types, kinds[obj])
            if id(obj) in markers:
                return by_name(dataclasses, markers[id(obj)])
            if kind is types.MappingProxyType:
                return (types.MappingProxyType, (dict(obj),))
            if kind is types.CodeType:
                return (marshal.loads, (marshal.dumps(obj),))
            if kind is types.CellType:
                # Its contents set after it is made (BUILD's setattr): a
                # closure that holds its own function is a cycle.
                try:
                    return (types.CellType, (), (None, {"cell_contents": obj.cell_contents}))
                except ValueError:
                    return (types.CellType, ())
            if kind is types.FunctionType and getattr(obj, "__module__", None) == "__main__":
                if id(obj.__globals__) not in self.ids and \
                        id(obj.__globals__) not in self.modules:
                    raise pickle.PicklingError("function %s: its globals are neither a "
                                               "namespace of the session's nor a module's"
                                               % obj.__qualname__)
                attrs = {"__qualname__": obj.__qualname__, "__module__": obj.__module__,
                         "__doc__": obj.__doc__, "__kwdefaults__": obj.__kwdefaults__,
                         "__annotations__": obj.__annotations__}
                return (types.FunctionType,
                        (obj.__code__, obj.__globals__, obj.__name__, obj.__defaults__,
                         obj.__closure__),
                        (obj.__dict__ or None, attrs))
            if isinstance(obj, type) and obj.__module__ == "__main__":
                if kind is not type:
                    raise pickle.PicklingError("class %s (of metaclass %s) was defined in a "
                                               "cell" % (obj.__qualname__, kind.__name__))
                slots = obj.__dict__.get("__slots__")
                made = {"__module__": "__main__", "__qualname__": obj.__qualname__}
                if slots is not None:
                    made["__slots__"] = slots
                skip = set(made) | {"__dict__", "__weakref__"}
                skip |= {slots} if isinstance(slots, str) else set(slots or ())
                attrs = {k: v for k, v in obj.__dict__.items() if k not in skip}
                return (type, (obj.__name__, obj.__bases__, made), (None, attrs))
            if kind is staticmethod or kind is classmethod:
                return (kind, (obj.__func__,))
            if kind is property:
                return (property, (obj.fget, obj.fset, obj.fdel, obj.__doc__))
            # Anything else as pickle writes it (an instance of a cell's
            # class refers to the class, which is written above).
            return NotImplemented

    return StatePickler


def state_unpickler_class():
    import pickle

    class StateUnpickler(pickle.Unpickler):
        def __init__(self, f, targets):
            super().__init__(f)
            self.targets = targets

        def persistent_load(self, pid):
            if isinstance(pid, str) and pid.startswith("module:"):
                import importlib

                return importlib.import_module(pid[len("module:"):]).__dict__
            if pid not in self.targets:
                raise pickle.UnpicklingError("no namespace %r in this session" % (pid,))
            return self.targets[pid]

    return StateUnpickler


class StateSink:
    """A file that keeps nothing: what a value would take, tried."""

    def write(self, b):
        return len(b)


def state_values(names):
    """{key: {name: value}}: what the namespaces hold, without the builtins
    each has of its own."""
    return {key: {n: v for n, v in ns.items() if n != "__builtins__"}
            for key, ns in names.items()}


def state_dump_namespaces(f, names):
    """The namespaces into f: whole, or, when a value cannot be written,
    all but the ones that cannot (each tried alone). Returns
    [[context, name, why]] of the ones left out."""
    pickler = state_pickler_class()
    values = state_values(names)
    start = f.tell()
    try:
        pickler(f, names).dump(values)
        return []
    except OSError:
        raise  # the file's, not a value's (its size limit, the disk)
    except Exception:  # noqa: BLE001 - any value's own pickling error
        f.seek(start)
        f.truncate()
    left_out = []
    for key, ns in values.items():
        for name in list(ns):
            try:
                pickler(StateSink(), names).dump(ns[name])
            except Exception as e:  # noqa: BLE001
                why = "%s: %s" % (type(e).__name__, e)
                left_out.append([key[4:] if key != "main" else None, name, why[:200]])
                del ns[name]
    pickler(f, names).dump(values)
    return left_out


def state_walk(put):
    """Each entry of the workspace, parents first, as put's record (the
    state file itself left out); symlinks are kept as links, never
    followed; what is neither file, directory nor link is skipped."""
    import stat as st

    for top, dirs, files, dfd in os.fwalk(WORKSPACE, follow_symlinks=False):
        rel_top = os.path.relpath(top, WORKSPACE)
        rel_top = "" if rel_top == "." else rel_top + "/"
        for name in dirs + files:
            rel = rel_top + name
            if rel == STATE_FILE:
                continue
            info = os.stat(name, dir_fd=dfd, follow_symlinks=False)
            if st.S_ISLNK(info.st_mode):
                put(("l", rel, os.readlink(name, dir_fd=dfd)))
            elif st.S_ISDIR(info.st_mode):
                put(("d", rel, st.S_IMODE(info.st_mode)))
            elif st.S_ISREG(info.st_mode):
                fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=dfd)
                with io.open(fd, "rb") as src:
                    put(("f", rel, st.S_IMODE(info.st_mode), src.read()))


def state_save(state):
    """Writes the state file; its size, what was left out, how many
    files, and what a state file never holds that this session had."""
    names = state_namespaces(state)
    path = os.path.join(WORKSPACE, STATE_FILE)
    try:
        return state_write_file(state, names, path)
    except OSError as e:
        try:
            os.unlink(path)
        except OSError:
            pass
        if e.errno in (errno.EFBIG, errno.ENOSPC, errno.EDQUOT):
            raise FileOpError(e.errno, "state: the session's state (its variables and "
                              "workspace files, as one file) passed the sandbox's %s: %s"
                              % ("largest file (--file-size)" if e.errno == errno.EFBIG
                                 else "disk (--disk)", os.strerror(e.errno)))
        raise FileOpError(e.errno or errno.EIO, "state: %s" % os.strerror(e.errno or errno.EIO))


def state_write_file(state, names, path):
    import pickle
    import sys

    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    files = [0]
    with io.open(fd, "w+b") as f:
        pickle.dump({"v": STATE_VERSION, "python": sys.version.split()[0]}, f, protocol=4)

        def put(record):
            files[0] += record[0] == "f"
            pickle.dump(record, f, protocol=4)

        state_walk(put)
        pickle.dump(("ns",), f, protocol=4)
        left_out = state_dump_namespaces(f, names)
        pickle.dump(("left_out", left_out), f, protocol=4)
        size = f.tell()
    running = sorted(pid for pid, p in PROCS.items() if p.returncode is None)
    answer = {"size": size, "files": files[0], "left_out": left_out}
    if running:
        answer["procs"] = running[:256]
    if state.get("node") is not None:
        answer["javascript"] = True
    return answer


def state_put_entry(record):
    """One workspace entry of a state file, made as the record says
    (what is there already is replaced; a symlink is never followed)."""
    kind, rel = record[0], record[1]
    parts = parts_of(rel)
    if not parts or ".." in parts:
        raise FileOpError(errno.EINVAL, "state: %r is not a path in the workspace" % rel)
    dfd = open_dir(parts[:-1], True)
    try:
        name = parts[-1]
        if kind == "d":
            try:
                os.mkdir(name, record[2] | 0o700, dir_fd=dfd)
            except FileExistsError:
                pass
            return
        try:
            os.unlink(name, dir_fd=dfd)
        except (FileNotFoundError, IsADirectoryError):
            pass
        if kind == "l":
            os.symlink(record[2], name, dir_fd=dfd)
            return
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW,
                     record[2] & 0o7777 | 0o600, dir_fd=dfd)
        with io.open(fd, "wb") as out:
            out.write(record[3])
    finally:
        os.close(dfd)


def state_load(state):
    """The state file back into this (new) session: the workspace's
    entries, then the namespaces. The file is removed either way."""
    import pickle

    path = os.path.join(WORKSPACE, STATE_FILE)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        raise FileOpError(errno.ENOENT, "state: nothing was written to load")
    import sys

    files, left_out, loaded, why = 0, [], True, None
    try:
        with io.open(fd, "rb") as f:
            head = pickle.load(f)
            if not isinstance(head, dict) or head.get("v") != STATE_VERSION:
                raise FileOpError(errno.EINVAL, "state: not a version %d state file"
                                  % STATE_VERSION)
            made, here = str(head.get("python")), "%d.%d" % sys.version_info[:2]
            # Functions travel as code objects, which only the same
            # version reads.
            if made.split(".")[:2] != here.split("."):
                raise FileOpError(errno.EPROTO, "state: made by Python %s; this sandbox "
                                  "has Python %s (its image): restore it where the image "
                                  "is the one it was made with" % (made, here))
            while True:
                record = pickle.load(f)
                if record[0] == "ns":
                    break
                state_put_entry(record)
                files += record[0] == "f"
            targets = _AnyNamespace({"main": state["namespace"]}, state)
            try:
                values = state_unpickler_class()(f, targets).load()
                left_out = pickle.load(f)[1]
            except Exception as e:  # noqa: BLE001 - the cells' values' own errors
                values, loaded = None, False
                why = "%s: %s" % (type(e).__name__, e)
            for key, ns in (values or {}).items():
                targets[key].update(ns)
    finally:
        try:
            os.unlink(path)
        except OSError:
            pass
    answer = {"files": files, "left_out": left_out, "loaded": loaded}
    if why:
        answer["why"] = why[:300]
    return answer


class _AnyNamespace(dict):
    """The namespaces a state file names, made as they are asked for:
    __main__'s, and each context's (a fresh one, at most MAX_CONTEXTS)."""

    def __init__(self, targets, state):
        super().__init__(targets)
        self.state = state

    def __contains__(self, key):
        return key == "main" or (isinstance(key, str) and key.startswith("ctx:"))

    def __getitem__(self, key):
        if key not in self:
            raise KeyError(key)
        if not dict.__contains__(self, key):
            contexts = self.state["contexts"]
            name = key[4:]
            if name not in contexts:
                if len(contexts) >= MAX_CONTEXTS:
                    raise FileOpError(errno.EMFILE, "state: more contexts than %d"
                                      % MAX_CONTEXTS)
                contexts[name] = fresh_namespace()
            dict.__setitem__(self, key, contexts[name])
        return dict.__getitem__(self, key)


def state_write(req):
    """Part of a state file, at its offset (the host sends them in order)."""
    import base64

    path = os.path.join(WORKSPACE, STATE_FILE)
    offset = int(req["offset"])
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | (os.O_TRUNC if offset == 0 else 0)
    fd = os.open(path, flags, 0o600)
    try:
        if os.fstat(fd).st_size != offset:
            raise FileOpError(errno.EINVAL, "state: a part at %d, after %d bytes"
                              % (offset, os.fstat(fd).st_size))
        os.lseek(fd, offset, os.SEEK_SET)
        view = memoryview(base64.b64decode(req["data"]))
        while view:
            view = view[os.write(fd, view):]
        return {"size": os.fstat(fd).st_size}
    finally:
        os.close(fd)
