"""The kit's rule of who may answer, with the roles some platforms have (Discord)."""

from __future__ import annotations

from askgate.channels import may_answer


def test_target_list_decides_when_the_target_has_one() -> None:
    """A target's user list admits its users only, even in a private chat."""
    assert may_answer("1", target_allowed=["1"], tenant_allowed=[], private=False)
    assert not may_answer("2", target_allowed=["1"], tenant_allowed=["2"], private=True)


def test_a_held_role_on_the_target_admits() -> None:
    """A target with only a role list admits whoever holds one of its roles."""
    assert may_answer(
        "5",
        target_allowed=None,
        tenant_allowed=[],
        private=False,
        roles=["r1", "r9"],
        target_roles=["r9"],
    )
    assert not may_answer(
        "5",
        target_allowed=None,
        tenant_allowed=["5"],
        private=False,
        roles=["r1"],
        target_roles=["r9"],
    )


def test_tenant_lists_decide_in_a_shared_room() -> None:
    """Without target lists: anyone in a private chat; the tenant's users or roles elsewhere."""
    assert may_answer("7", target_allowed=None, tenant_allowed=[], private=True)
    assert not may_answer("7", target_allowed=None, tenant_allowed=["8"], private=False)
    assert may_answer(
        "7",
        target_allowed=None,
        tenant_allowed=["8"],
        private=False,
        roles=["ops"],
        tenant_roles=["ops"],
    )
