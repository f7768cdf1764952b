"""Keyword arguments to a C struct aj_config, checked by the library itself
(aj_config_validate) so that Python and C accept exactly the same values."""
from ._native import ffi, lib
from ._secrets import Secrets
from .errors import ConfigError

TIERS = ("process", "container", "microvm", "docker", "gvisor")

# preload's kind: "numpy,pandas" or ["numpy", "pandas"], one comma-separated
# string in the struct. The names are aj_config_validate's to check, so
# Python refuses the same ones as the flags, in the same words.
MODULES = "modules"
# ro_bind's kind: "HOST[:SANDBOX]" or a list of them; the paths are
# aj_config_validate's to check, as for preload.
PATHS = "paths"
# allow_hosts' and allow_cidrs' kind: a rule or a list of them, each checked
# by aj_config_validate (the CLI's --allow-host and --allow-cidr words).
RULES = "rules"
# secrets' kind: a list of dicts (docs/secrets.md), one JSON array text in
# the struct; the library checks every field. Write-only: held as Secrets,
# whose repr and getters give the names, never a value.
SECRETS = "secrets"
# env's kind: {"NAME": "VALUE"}, "NAME=VALUE" strings in the struct; which
# names may be set is aj_config_validate's to say (the CLI's --env words).
VARIABLES = "variables"

# keyword: (field of struct aj_config, type). Every limit the deployer sets;
# the agent's code can change none of them.
FIELDS = {
    "timeout": ("limits.wall_sec", float),
    "cpu_sec": ("limits.cpu_sec", int),
    "memory_mb": ("limits.memory_mb", int),
    "pids": ("limits.pids", int),
    "file_size_mb": ("limits.file_size_mb", int),
    "disk_mb": ("limits.disk_mb", int),
    "output_kb": ("limits.output_kb", int),
    "open_files": ("limits.open_files", int),
    "uid_base": ("uid_base", int),
    "slots": ("slots", int),
    "vm_pool": ("vm_pool", int),
    "session_idle_sec": ("session.idle_sec", float),
    "session_lifetime_sec": ("session.lifetime_sec", float),
    "pause_keep_sec": ("session.pause_keep_sec", float),
    "session_cpu_sec": ("session.cpu_sec", int),
    "max_sessions": ("session.max_sessions", int),
    "transfer_mb": ("session.transfer_mb", int),
    "max_images": ("session.images", int),
    "image_kb": ("session.image_kb", int),
    "python": ("python", str),
    "state_dir": ("state_dir", str),
    "image": ("image", str),
    "cgroup_root": ("cgroup_root", str),
    "accel": ("accel", str),
    "docker_socket": ("docker_socket", str),
    "docker_image": ("docker_image", str),
    "warm": ("warm", bool),
    "preload": ("preload", MODULES),
    "ro_bind": ("ro_binds", PATHS),
    "allow_hosts": ("allow_hosts", RULES),
    "allow_cidrs": ("allow_cidrs", RULES),
    "env": ("env", VARIABLES),
    "egress_out_mb": ("egress.out_mb", int),
    "egress_in_mb": ("egress.in_mb", int),
    "egress_connections": ("egress.connections", int),
    "egress_kbps": ("egress.kbps", int),
    # A PEM file of CAs the sandbox trusts beside its image's bundle
    # (docs/egress.md, "HTTPS"); the library checks the file.
    "trust_ca": ("trust_ca", str),
    # The only names a command's own env may set (NAME or PREFIX*).
    "exec_env_allow": ("exec_env_allow", RULES),
    # Credentials the code can use but never see (docs/secrets.md).
    "secrets": ("secrets", SECRETS),
    # A PEM file of CAs the egress proxy trusts for the upstreams of
    # secret-bearing connections, beside the host's store.
    "egress_ca": ("egress_ca", str),
}

# The C list fields and their counts, for the keywords that are lists.
_LISTS = {"ro_binds": "ro_bind_count", "allow_hosts": "allow_host_count",
          "allow_cidrs": "allow_cidr_count", "env": "env_count",
          "exec_env_allow": "exec_env_allow_count"}


class Config:
    """A validated struct aj_config and the strings it points into (kept
    alive as long as it is)."""

    def __init__(self, tier, options):
        if not isinstance(tier, str) or tier not in TIERS:
            raise ConfigError(f"tier: {tier!r} is not one of {', '.join(TIERS)}")
        self.tier = tier
        self.c = ffi.new("struct aj_config *")
        lib.aj_config_init(self.c)
        self.c.tier = TIERS.index(tier)
        self._strings = []
        self.secrets = None  # a Secrets, when given
        for key, value in options.items():
            if value is None:
                continue  # the library's default
            if key not in FIELDS:
                raise TypeError(f"unexpected keyword argument {key!r}")
            path, kind = FIELDS[key]
            self._set(key, path, kind, value)
        err = ffi.new("struct aj_error *")
        if lib.aj_config_validate(self.c, err):
            message = ffi.string(err.message).decode("utf-8", "replace")
            if self.secrets is not None:
                message = self.secrets.scrub(message)
            raise ConfigError(message)

    def __repr__(self):
        secrets = "" if self.secrets is None else f" {self.secrets!r}"
        return f"<Config tier={self.tier}{secrets}>"

    def _set(self, key, path, kind, value):
        if kind is SECRETS:
            self.secrets = value if isinstance(value, Secrets) else Secrets(value)
            self.c.secrets = self._c_string(key, self.secrets._text)
            return
        if kind is VARIABLES:
            self._set_env(key, path, value)
            return
        if kind in (PATHS, RULES):
            self._set_list(key, path, kind, value)
            return
        if kind is MODULES:
            if isinstance(value, (list, tuple)):
                if not all(isinstance(v, str) for v in value):
                    raise ConfigError(f"{key}: every module name must be a string")
                value = ",".join(value)
            elif not isinstance(value, str):
                raise ConfigError(f"{key}: must be a string or a list of strings, "
                                  f"not {type(value).__name__}")
            kind = str
        if kind is bool:
            # Strictly a bool: 0, 1 or "no" would say something else by accident.
            if not isinstance(value, bool):
                raise ConfigError(f"{key}: must be True or False, not {type(value).__name__}")
        elif kind is str:
            if not isinstance(value, (str, bytes)):
                raise ConfigError(f"{key}: must be a string, not {type(value).__name__}")
            value = self._c_string(key, value)
        elif isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{key}: must be a number, not {type(value).__name__}")
        elif kind is int:
            if value != int(value) or not 0 <= value <= 0xFFFFFFFF:
                raise ConfigError(f"{key}: {value!r} is not a whole number from 0 to 4294967295")
            value = int(value)
        else:
            value = float(value)
            if value != value or value in (float("inf"), float("-inf")):
                raise ConfigError(f"{key}: {value!r} is not a finite number")
        obj = self.c
        parts = path.split(".")
        for p in parts[:-1]:
            obj = getattr(obj, p)
        setattr(obj, parts[-1], value)

    def _c_string(self, key, value):
        """A C copy of a str or bytes value, kept alive with the config."""
        c = _c_string(key, value)
        self._strings.append(c)
        return c

    def _set_list(self, key, field, kind, value):
        strings = c_strings(key, value, "path" if kind is PATHS else "rule")
        self._strings.append(strings)
        setattr(self.c, field, strings.array)
        setattr(self.c, _LISTS[field], len(strings.items))

    def _set_env(self, key, field, value):
        if not isinstance(value, dict):
            raise ConfigError(f"{key}: must be a dict of names to values, "
                              f"not {type(value).__name__}")
        items = []
        for name, v in value.items():
            if not isinstance(name, str) or not isinstance(v, str):
                raise ConfigError(f"{key}: names and values must be strings "
                                  f"({name!r}: {type(v).__name__})")
            if "=" in name:
                raise ConfigError(f"{key}: '{name}' is not a variable name (it holds '=')")
            items.append(f"{name}={v}")
        strings = c_strings(key, items, "variable")
        self._strings.append(strings)
        setattr(self.c, field, strings.array)
        setattr(self.c, _LISTS[field], len(strings.items))

    def value(self, key):
        obj = self.c
        field, kind = FIELDS[key]
        if kind is SECRETS:
            # Write-only: the names, never a value.
            return None if self.secrets is None else list(self.secrets.names)
        if kind is VARIABLES:
            array, n = getattr(obj, field), getattr(obj, _LISTS[field])
            return dict(ffi.string(array[i]).decode().split("=", 1) for i in range(n))
        if kind in (PATHS, RULES):
            array, n = getattr(obj, field), getattr(obj, _LISTS[field])
            return [ffi.string(array[i]).decode() for i in range(n)]
        for p in FIELDS[key][0].split("."):
            obj = getattr(obj, p)
        if FIELDS[key][1] in (str, MODULES):
            return ffi.string(obj).decode() if obj != ffi.NULL else None
        return obj

    def open_failure(self, err):
        """Why an open failed: the library's message, and `agentjail
        check`'s reason the tier cannot run (the message when check finds
        nothing wrong with the tier itself)."""
        message = ffi.string(err.message).decode("utf-8", "replace")
        return message, self.error_reason() or message

    def error_reason(self):
        """`agentjail check`'s reason this tier cannot run, or None."""
        err = ffi.new("struct aj_error *")
        if lib.aj_check(self.c.tier, self.c, err):
            return ffi.string(err.message).decode("utf-8", "replace")
        return None


class _CStrings:
    """A const char *[] and the C strings it points at (items), alive
    together."""

    def __init__(self, items):
        self.items = items
        self.array = ffi.new("const char *[]", max(len(items), 1))
        for i, item in enumerate(items):
            self.array[i] = item


def _c_string(key, value):
    """A C copy of a str or bytes value."""
    b = value.encode() if isinstance(value, str) else value
    if b"\0" in b:
        raise ConfigError(f"{key}: contains a NUL byte")
    return ffi.new("char[]", b)


def c_strings(key, value, what):
    """The strings in value (one, or a list of them) as a C array: what a
    list field and aj_session_egress_keep take."""
    if isinstance(value, (str, bytes)):
        value = [value]
    if not isinstance(value, (list, tuple)):
        raise ConfigError(f"{key}: must be a string or a list of strings, "
                          f"not {type(value).__name__}")
    for v in value:
        if not isinstance(v, (str, bytes)):
            raise ConfigError(f"{key}: every {what} must be a string, not {type(v).__name__}")
    return _CStrings([_c_string(key, v) for v in value])
