"""The part of cffi's ABI mode that the binding uses, over ctypes.

A Python without cffi (pyenv's, a venv without Debian's python3-cffi; there
is no PyPI to fetch it from) still runs the binding: this module reads the
same declarations (_native.CDEF) and offers the same `ffi` and `lib` names,
so nothing else in the package knows which one it got. The declarations are
never written twice: tests/test_abi.py holds both backends' layouts to the
compiler's.

Only what the package calls is here: new, string, unpack, cast, sizeof,
offsetof, NULL, dlopen, callback (of a declared function-pointer typedef).
ctypes' CDLL releases the GIL around each call, as cffi does, and a
callback takes it when the library calls it from a thread of its own, as
cffi's does."""
import ctypes
import re

_SCALARS = {
    "double": ctypes.c_double, "int": ctypes.c_int, "bool": ctypes.c_bool,
    "size_t": ctypes.c_size_t, "uint16_t": ctypes.c_uint16, "uint32_t": ctypes.c_uint32,
    "uint64_t": ctypes.c_uint64,
    "char": ctypes.c_char, "unsigned char": ctypes.c_ubyte, "unsigned": ctypes.c_uint,
}


class _Null:
    """ffi.NULL: equal to every null pointer ctypes hands back (None from a
    void *, a false LP_ object from a typed pointer)."""

    def __eq__(self, other):
        if other is self or other is None:
            return True
        return isinstance(other, ctypes._Pointer) and not other

    def __ne__(self, other):
        return not self == other

    __hash__ = object.__hash__

    def __repr__(self):
        return "NULL"


NULL = _Null()


class _Struct(ctypes.Structure):
    def __setattr__(self, name, value):
        # cffi writes NULL into a pointer field; ctypes spells it None.
        super().__setattr__(name, None if value is NULL else value)


class FFI:
    def __init__(self):
        self._structs = {}    # name -> ctypes.Structure subclass
        self._opaque = set()  # declared, never defined: handles (void *)
        self._enums = {}
        self._functions = {}  # name -> (restype, argtypes)
        self._typedefs = {}   # name -> ctypes CFUNCTYPE (function pointers only)

    # ---- the declarations --------------------------------------------

    def cdef(self, text):
        for name, body in re.findall(r"enum\s+(\w+)\s*\{([^}]*)\}\s*;", text):
            value = -1
            for item in (i.strip() for i in body.split(",") if i.strip()):
                key, _, v = item.partition("=")
                value = int(v) if v.strip() else value + 1
                self._enums[key.strip()] = value
        text = re.sub(r"enum\s+\w+\s*\{[^}]*\}\s*;", "", text)
        # Structures and function-pointer typedefs in the order written: a
        # typedef names the structures before it, a structure the typedefs.
        definition = re.compile(r"struct\s+(\w+)\s*\{([^}]*)\}\s*;"
                                r"|typedef\s+([^;(]+?)\(\s*\*\s*(\w+)\s*\)\s*\(([^)]*)\)\s*;")
        for m in definition.finditer(text):
            if m.group(1):
                fields = [self._declaration(d) for d in m.group(2).split(";") if d.strip()]
                self._structs[m.group(1)] = type(m.group(1), (_Struct,), {"_fields_": fields})
                continue
            restype = self._type(m.group(3))
            params = [p for p in (p.strip() for p in m.group(5).split(",")) if p and p != "void"]
            argtypes = [self._declaration(p)[1] for p in params]
            self._typedefs[m.group(4)] = ctypes.CFUNCTYPE(restype, *argtypes)
        text = definition.sub("", text)
        for stmt in (s.strip() for s in text.split(";") if s.strip()):
            m = re.fullmatch(r"struct\s+(\w+)", stmt)
            if m:
                self._opaque.add(m.group(1))
                continue
            m = re.fullmatch(r"(.+?)\(([^)]*)\)", stmt, re.S)
            if not m:
                raise ValueError(f"agentjail: cannot read the declaration {stmt!r}")
            name, restype = self._declaration(m.group(1), result=True)
            params = [p for p in (p.strip() for p in m.group(2).split(",")) if p and p != "void"]
            argtypes = [self._declaration(p, param=True)[1] for p in params]
            self._functions[name] = (restype, argtypes)

    def _declaration(self, decl, result=False, param=False):
        """("name", ctype) of one C declaration: "const char *const *x"."""
        decl = " ".join(decl.split())
        m = re.fullmatch(r"(.*?)(\w+)\s*(?:\[(\d+)\])?", decl)
        base, name, count = m.group(1), m.group(2), m.group(3)
        ctype = self._type(base, param=param)
        if count:
            ctype = ctype * int(count)
        return name, ctype

    def _type(self, spelled, param=False):
        """The ctype of a C type as written ("struct aj_result *")."""
        stars = spelled.count("*")
        words = [w for w in spelled.replace("*", " ").split() if w != "const"]
        base = " ".join(words)
        if base in self._typedefs:
            ctype = self._typedefs[base]
        elif base.startswith("enum "):
            ctype = ctypes.c_int
        elif base.startswith("struct "):
            tag = base.split()[1]
            if tag in self._opaque or tag not in self._structs:
                # A handle the caller never looks into.
                ctype, stars = ctypes.c_void_p, stars - 1
                if stars < 0:
                    raise ValueError(f"agentjail: struct {tag} is opaque")
            else:
                ctype = self._structs[tag]
        elif base == "void":
            if not stars:
                return None
            ctype, stars = ctypes.c_void_p, stars - 1
        else:
            ctype = _SCALARS[base]
        if param and stars == 1 and ctype is ctypes.c_char:
            # An input string: ctypes passes bytes as they are.
            return ctypes.c_char_p
        for _ in range(stars):
            ctype = ctypes.POINTER(ctype)
        return ctype

    # ---- cffi's calls ------------------------------------------------

    NULL = NULL

    def dlopen(self, path):
        return _Lib(ctypes.CDLL(path), self)

    def new(self, spelled, init=None):
        """A zeroed C object that lives as long as the returned value:
        "struct X *" gives the struct (passed by reference where a pointer
        is expected), "T *" one T, "T[]" init items (or bytes, NUL added)."""
        spelled = spelled.strip()
        if spelled.endswith("[]"):
            item = self._type(spelled[:-2])
            if isinstance(init, bytes):
                return ctypes.create_string_buffer(init)
            return (item * init)()
        item = self._type(spelled[:-1])
        if isinstance(item, type) and issubclass(item, ctypes.Structure):
            return item()
        return (item * 1)()

    def cast(self, spelled, value):
        ctype = self._type(spelled)
        if isinstance(value, int):
            value = ctypes.c_void_p(value)
        return ctypes.cast(value, ctype)

    def string(self, value):
        if isinstance(value, bytes):  # a char[N] field, read by ctypes
            return value
        if isinstance(value, ctypes.Array):
            return value.value
        return ctypes.string_at(value)

    def unpack(self, pointer, length):
        return ctypes.string_at(pointer, length) if length else b""

    def callback(self, spelled, fn):
        """A C function pointer of the typedef spelled that calls fn; it
        must be kept alive as long as C may call it, as cffi's."""
        return self._typedefs[spelled](fn)

    def sizeof(self, spelled):
        return ctypes.sizeof(self._type(spelled))

    def offsetof(self, spelled, field):
        return getattr(self._type(spelled), field).offset


class _Lib:
    """The library's functions (bound at first use, so a missing one is an
    AttributeError, as with cffi) and the declared enums' values."""

    def __init__(self, dll, ffi):
        self._dll = dll
        self._ffi = ffi
        self.__dict__.update(ffi._enums)

    def __getattr__(self, name):
        if name not in self._ffi._functions:
            raise AttributeError(f"agentjail: {name} is not declared")
        fn = getattr(self._dll, name)
        fn.restype, fn.argtypes = self._ffi._functions[name]

        def call(*args):
            # ffi.NULL as an argument is a null pointer, as cffi takes it
            # (ctypes spells it None).
            return fn(*(None if a is NULL else a for a in args))

        setattr(self, name, call)
        return call
