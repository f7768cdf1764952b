"""check(): which tiers can run here, and exactly why the others cannot, as
`agentjail check` says."""
from .config import TIERS, Config


def check(tier=None, **options):
    """{tier: None if it can run, else the reason}; one tier if named. The
    options are Sandbox's (image=..., accel=...)."""
    tiers = [tier] if tier else list(TIERS)
    return {t: Config(t, options).error_reason() for t in tiers}
