"""``rocketpipe admin`` ACL 2.0 commands of Apache RocketMQ 5.3 (L4, cli): ``createUser``,
``updateUser``, ``deleteUser``, ``getUser``, ``listUser``, ``createAcl``, ``updateAcl``,
``deleteAcl``, ``getAcl``, ``listAcl``.

Mirror ``tools/command/auth/*SubCommand``: the same options (``-b`` or ``-c``, ``-u -p -t -s``,
``-s -r -a -i -d``; lists comma-separated) and, without ``--json``, the same printed lines
(``create user to <addr> success.``, the ``#UserName …`` / ``#Subject …`` tables). ``-c`` goes to
every master of the cluster. The ``admin`` group's ``--access-key`` / ``--secret-key`` sign the
requests (mqadmin reads them from ``conf/tools.yml``).

Imports: the public API of :mod:`rocketpipe.client`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ...errors import handle_errors
from ._common import DEFAULT_NAMESRV, BrokerAddrOption, ClusterNameOption, JsonOption, NamesrvOption, emit, run_admin
from ._common import either_broker_or_cluster as _need_target

if TYPE_CHECKING:
    from rich.console import Console

    from rocketpipe.client import Admin
    from rocketpipe.protocol.bodies.auth import AclInfo, UserInfo

#: ``GetUserSubCommand.FORMAT`` / ``ListUserSubCommand.FORMAT``.
USER_FORMAT = "{:<16}  {:<22}  {:<22}  {:<22}"
#: ``GetAclSubCommand.FORMAT`` / ``ListAclSubCommand.FORMAT``.
ACL_FORMAT = "{:<16}  {:<10}  {:<22}  {:<20}  {:<24}  {:<10}"

UsernameOption = Annotated[str, typer.Option("--username", "-u", help="The username.")]
SubjectOption = Annotated[str, typer.Option("--subject", "-s", help="The subject, User:<username>.")]


def register(app: typer.Typer) -> None:
    """Add the ACL 2.0 commands to ``app``."""
    app.command("createUser")(create_user)
    app.command("updateUser")(update_user)
    app.command("deleteUser")(delete_user)
    app.command("getUser")(get_user)
    app.command("listUser")(list_user)
    app.command("createAcl")(create_acl)
    app.command("updateAcl")(update_acl)
    app.command("deleteAcl")(delete_acl)
    app.command("getAcl")(get_acl)
    app.command("listAcl")(list_acl)


def _split(text: str | None) -> list[str] | None:
    """mqadmin's ``StringUtils.split(value, ',')`` + trim (empty parts dropped)."""
    if text is None:
        return None
    return [p.strip() for p in text.split(",") if p.strip()]


def _java(v: Any) -> str:
    """``printf("%s")`` of a Java value: ``null``, ``[a, b]``."""
    if v is None:
        return "null"
    if isinstance(v, list):
        return "[" + ", ".join(str(x) for x in v) + "]"
    return str(v)


async def _targets(admin: Admin, broker_addr: str | None, cluster_name: str | None) -> list[str]:
    return [broker_addr.strip()] if broker_addr else await admin.cluster_master_addrs(cluster_name)


def _write(
    broker_addr: str | None,
    cluster_name: str | None,
    namesrv: str,
    as_json: bool,
    command: str,
    message: str,
    call: Callable[[Admin, str], Awaitable[None]],
    data: dict[str, Any],
) -> None:
    """Run ``call`` on each target broker and print ``<message> to <addr> success.`` per broker."""
    _need_target(broker_addr, cluster_name, command)

    async def go(admin: Admin) -> list[str]:
        addrs = await _targets(admin, broker_addr, cluster_name)
        for a in addrs:
            await call(admin, a)
        return addrs

    addrs = run_admin(namesrv, go)

    def render(c: Console) -> None:
        for a in addrs:
            c.print(f"{message} to {a} success.", markup=False, soft_wrap=True)

    emit(as_json, {"brokerAddrs": addrs, **data}, render)


def _user_rows(c: Console, users: list[UserInfo]) -> None:
    c.print(USER_FORMAT.format("#UserName", "#Password", "#UserType", "#UserStatus"), markup=False, soft_wrap=True)
    for u in users:
        row = USER_FORMAT.format(_java(u.username), _java(u.password), _java(u.user_type), _java(u.user_status))
        c.print(row, markup=False, soft_wrap=True)


def _acl_rows(c: Console, acls: list[AclInfo]) -> None:
    c.print(
        ACL_FORMAT.format("#Subject", "#PolicyType", "#Resource", "#Actions", "#SourceIp", "#Decision"),
        markup=False,
        soft_wrap=True,
    )
    for a in acls:
        if not a.policies:
            c.print(ACL_FORMAT.format(_java(a.subject), "", "", "", "", ""), markup=False, soft_wrap=True)
            continue
        for p in a.policies:
            for e in p.entries or []:
                row = ACL_FORMAT.format(
                    _java(a.subject),
                    _java(p.policy_type),
                    _java(e.resource),
                    _java(e.actions),
                    _java(e.source_ips),
                    _java(e.decision),
                )
                c.print(row, markup=False, soft_wrap=True)


# ------------------------------------------------------------------------------------ users


@handle_errors
def create_user(
    username: UsernameOption,
    password: Annotated[str, typer.Option("--password", "-p", help="The password (secret key).")],
    user_type: Annotated[str | None, typer.Option("--userType", "-t", help="Super or Normal (default).")] = None,
    broker_addr: BrokerAddrOption = None,
    cluster_name: ClusterNameOption = None,
    namesrv: NamesrvOption = DEFAULT_NAMESRV,
    as_json: JsonOption = False,
) -> None:
    """Create user to cluster (CreateUserSubCommand)."""
    from rocketpipe.client import admin_acl

    u, p, t = username.strip(), password.strip(), user_type.strip() if user_type else None
    _write(
        broker_addr,
        cluster_name,
        namesrv,
        as_json,
        "createUser",
        "create user",
        lambda admin, a: admin_acl.create_user(admin, a, u, p, t),
        {"username": u, "userType": t},
    )


@handle_errors
def update_user(
    username: UsernameOption,
    password: Annotated[str | None, typer.Option("--password", "-p", help="The new password.")] = None,
    user_type: Annotated[str | None, typer.Option("--userType", "-t", help="Super or Normal.")] = None,
    user_status: Annotated[str | None, typer.Option("--userStatus", "-s", help="enable or disable.")] = None,
    broker_addr: BrokerAddrOption = None,
    cluster_name: ClusterNameOption = None,
    namesrv: NamesrvOption = DEFAULT_NAMESRV,
    as_json: JsonOption = False,
) -> None:
    """Update user to cluster (UpdateUserSubCommand); one of -p, -t, -s is needed."""
    from rocketpipe.cli.errors import EXIT_USAGE, fail
    from rocketpipe.client import admin_acl

    if password is None and user_type is None and user_status is None:
        raise fail("updateUser needs -p/--password, -t/--userType or -s/--userStatus", EXIT_USAGE)
    u = username.strip()
    _write(
        broker_addr,
        cluster_name,
        namesrv,
        as_json,
        "updateUser",
        "update user",
        lambda admin, a: admin_acl.update_user(admin, a, u, password, user_type, user_status),
        {"username": u},
    )


@handle_errors
def delete_user(
    username: UsernameOption,
    broker_addr: BrokerAddrOption = None,
    cluster_name: ClusterNameOption = None,
    namesrv: NamesrvOption = DEFAULT_NAMESRV,
    as_json: JsonOption = False,
) -> None:
    """Delete user from cluster (DeleteUserSubCommand); its ACL goes with it."""
    from rocketpipe.client import admin_acl

    u = username.strip()
    _write(
        broker_addr,
        cluster_name,
        namesrv,
        as_json,
        "deleteUser",
        "delete user",
        lambda admin, a: admin_acl.delete_user(admin, a, u),
        {"username": u},
    )


@handle_errors
def get_user(
    username: UsernameOption,
    broker_addr: BrokerAddrOption = None,
    cluster_name: ClusterNameOption = None,
    namesrv: NamesrvOption = DEFAULT_NAMESRV,
    as_json: JsonOption = False,
) -> None:
    """Get user from cluster (GetUserSubCommand): the first broker that knows it."""
    from rocketpipe.client import admin_acl

    _need_target(broker_addr, cluster_name, "getUser")

    async def go(admin: Admin) -> UserInfo | None:
        for a in await _targets(admin, broker_addr, cluster_name):
            user = await admin_acl.get_user(admin, a, username.strip())
            if user is not None:
                return user
        return None

    user = run_admin(namesrv, go)
    emit(as_json, None if user is None else user.to_dict(), lambda c: _user_rows(c, [user]) if user else None)


@handle_errors
def list_user(
    filter_: Annotated[str | None, typer.Option("--filter", "-f", help="Only usernames containing this.")] = None,
    broker_addr: BrokerAddrOption = None,
    cluster_name: ClusterNameOption = None,
    namesrv: NamesrvOption = DEFAULT_NAMESRV,
    as_json: JsonOption = False,
) -> None:
    """List user from cluster (ListUserSubCommand): the first broker with users."""
    from rocketpipe.client import admin_acl

    _need_target(broker_addr, cluster_name, "listUser")

    async def go(admin: Admin) -> list[UserInfo]:
        for a in await _targets(admin, broker_addr, cluster_name):
            users = await admin_acl.list_users(admin, a, filter_.strip() if filter_ else None)
            if users:
                return users
        return []

    users = run_admin(namesrv, go)
    emit(as_json, [u.to_dict() for u in users], lambda c: _user_rows(c, users) if users else None)


# ------------------------------------------------------------------------------------- ACLs


def _put_acl(
    command: str,
    subject: str,
    resources: str,
    actions: str,
    decision: str,
    source_ip: str | None,
    broker_addr: str | None,
    cluster_name: str | None,
    namesrv: str,
    as_json: bool,
) -> None:
    from rocketpipe.client import admin_acl

    fn = admin_acl.create_acl if command == "createAcl" else admin_acl.update_acl
    s, r, a, i, d = subject.strip(), _split(resources) or [], _split(actions) or [], _split(source_ip), decision.strip()
    _write(
        broker_addr,
        cluster_name,
        namesrv,
        as_json,
        command,
        "create acl" if command == "createAcl" else "update acl",
        lambda admin, addr: fn(admin, addr, s, r, a, i, d),
        {"subject": s, "resources": r, "actions": a, "sourceIps": i, "decision": d},
    )


ResourcesOption = Annotated[
    str, typer.Option("--resources", "-r", help="Topic:t, Group:g, Topic:pre*, Topic:*, * (comma-separated).")
]
ActionsOption = Annotated[
    str, typer.Option("--actions", "-a", help="Pub, Sub, Create, Update, Delete, Get, List, All (comma-separated).")
]
DecisionOption = Annotated[str, typer.Option("--decision", "-d", help="Allow or Deny.")]
SourceIpOption = Annotated[str | None, typer.Option("--sourceIp", "-i", help="IPs or CIDRs (comma-separated).")]


@handle_errors
def create_acl(
    subject: SubjectOption,
    resources: ResourcesOption,
    actions: ActionsOption,
    decision: DecisionOption,
    source_ip: SourceIpOption = None,
    broker_addr: BrokerAddrOption = None,
    cluster_name: ClusterNameOption = None,
    namesrv: NamesrvOption = DEFAULT_NAMESRV,
    as_json: JsonOption = False,
) -> None:
    """Create acl to cluster (CreateAclSubCommand), merged into the subject's ACL."""
    _put_acl("createAcl", subject, resources, actions, decision, source_ip, broker_addr, cluster_name, namesrv, as_json)


@handle_errors
def update_acl(
    subject: SubjectOption,
    resources: ResourcesOption,
    actions: ActionsOption,
    decision: DecisionOption,
    source_ip: SourceIpOption = None,
    broker_addr: BrokerAddrOption = None,
    cluster_name: ClusterNameOption = None,
    namesrv: NamesrvOption = DEFAULT_NAMESRV,
    as_json: JsonOption = False,
) -> None:
    """Update acl to cluster (UpdateAclSubCommand; the same merge as createAcl)."""
    _put_acl("updateAcl", subject, resources, actions, decision, source_ip, broker_addr, cluster_name, namesrv, as_json)


@handle_errors
def delete_acl(
    subject: SubjectOption,
    resources: Annotated[
        str | None, typer.Option("--resources", "-r", help="One resource; none: the whole ACL.")
    ] = None,
    broker_addr: BrokerAddrOption = None,
    cluster_name: ClusterNameOption = None,
    namesrv: NamesrvOption = DEFAULT_NAMESRV,
    as_json: JsonOption = False,
) -> None:
    """Delete acl from cluster (DeleteAclSubCommand)."""
    from rocketpipe.client import admin_acl

    s, r = subject.strip(), resources.strip() if resources else None
    _write(
        broker_addr,
        cluster_name,
        namesrv,
        as_json,
        "deleteAcl",
        "delete acl",
        lambda admin, a: admin_acl.delete_acl(admin, a, s, r),
        {"subject": s, "resource": r},
    )


@handle_errors
def get_acl(
    subject: SubjectOption,
    broker_addr: BrokerAddrOption = None,
    cluster_name: ClusterNameOption = None,
    namesrv: NamesrvOption = DEFAULT_NAMESRV,
    as_json: JsonOption = False,
) -> None:
    """Get acl from cluster (GetAclSubCommand): the first broker that has it."""
    from rocketpipe.client import admin_acl

    _need_target(broker_addr, cluster_name, "getAcl")

    async def go(admin: Admin) -> AclInfo | None:
        for a in await _targets(admin, broker_addr, cluster_name):
            got = await admin_acl.get_acl(admin, a, subject.strip())
            if got is not None:
                return got
        return None

    got = run_admin(namesrv, go)
    emit(as_json, None if got is None else got.to_dict(), lambda c: _acl_rows(c, [got]) if got else None)


@handle_errors
def list_acl(
    subject: Annotated[str | None, typer.Option("--subject", "-s", help="Only subjects containing this.")] = None,
    resource: Annotated[str | None, typer.Option("--resource", "-r", help="Only resources containing this.")] = None,
    broker_addr: BrokerAddrOption = None,
    cluster_name: ClusterNameOption = None,
    namesrv: NamesrvOption = DEFAULT_NAMESRV,
    as_json: JsonOption = False,
) -> None:
    """List acl from cluster (ListAclSubCommand); with -c, every master's ACLs in turn."""
    from rocketpipe.client import admin_acl

    _need_target(broker_addr, cluster_name, "listAcl")

    async def go(admin: Admin) -> list[AclInfo]:
        out: list[AclInfo] = []
        for a in await _targets(admin, broker_addr, cluster_name):
            out += await admin_acl.list_acl(
                admin, a, subject.strip() if subject else None, resource.strip() if resource else None
            )
        return out

    acls = run_admin(namesrv, go)
    emit(as_json, [a.to_dict() for a in acls], lambda c: _acl_rows(c, acls) if acls else None)
