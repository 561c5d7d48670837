"""ACL 2.0 users and ACLs, in memory (L2, sans-IO): :class:`AuthMetadata`.

Mirrors ``AuthenticationMetadataManagerImpl`` + ``AuthorizationMetadataManagerImpl`` of Java 5.3.3
(checks, merge rules and error messages) over Java's ``LocalAuthenticationMetadataProvider`` /
``LocalAuthorizationMetadataProvider`` (lists come in key order, as RocksDB iterates). Java keeps
the two tables in RocksDB under ``<store>/config/{users,acls}``; here :meth:`AuthMetadata.to_json`
/ :meth:`AuthMetadata.from_json` give one JSON object the broker saves atomically.

Errors are :class:`~.errors.AuthenticationError` (user operations) and
:class:`~.errors.AuthorizationError` (ACL operations), both answered NO_PERMISSION (16).
"""

from __future__ import annotations

from typing import Any

from ..protocol.bodies.auth import AclInfo, PolicyEntryInfo, PolicyInfo, UserInfo
from .auth_model import (
    Action,
    Decision,
    Policy,
    PolicyEntry,
    PolicyType,
    Resource,
    User,
    UserStatus,
    UserType,
    by_name,
    is_valid_ip_or_cidr,
    subject_username,
)
from .errors import AuthenticationError, AuthorizationError

__all__ = ["AuthMetadata", "acl_info_of", "policies_of", "user_info_of", "user_of"]


def user_of(info: UserInfo) -> tuple[str | None, str | None, UserType | None, UserStatus | None]:
    """``UserConverter.convertUser(UserInfo)``: (username, password, type, status); unknown names are None."""
    return info.username, info.password, by_name(UserType, info.user_type), by_name(UserStatus, info.user_status)


def user_info_of(user: User) -> UserInfo:
    """``UserConverter.convertUser(User)`` (the password included, as Java answers it)."""
    return UserInfo(user.username, user.password, user.user_type.java_name, user.user_status.java_name)


def _entry_of(e: PolicyEntryInfo) -> PolicyEntry:
    """``AclConverter`` for one entry, then ``validate(PolicyEntry)``.

    Raises:
        AuthorizationError: Java's messages (resource null, actions empty or Any, bad source IP,
            decision null).
    """
    resource = Resource.parse(e.resource)
    if resource is None:
        raise AuthorizationError("The resource is null.")
    actions = [a for a in (by_name(Action, n) for n in e.actions or []) if a is not None]
    if not actions:
        raise AuthorizationError("The actions is empty.")
    if Action.ANY in actions:
        raise AuthorizationError("The actions can not be Any.")
    for ip in e.source_ips or []:
        if not ip.strip():
            raise AuthorizationError("The source ip is empty.")
        if not is_valid_ip_or_cidr(ip):
            raise AuthorizationError("The source ip is invalid.")
    decision = by_name(Decision, e.decision)
    if decision is None:
        raise AuthorizationError("The decision is null or illegal.")
    return PolicyEntry(resource, actions, list(e.source_ips or []), decision)


def policies_of(info: AclInfo) -> list[Policy]:
    """``AclConverter.convertAcl`` + ``validate(Acl)`` + ``initAcl`` (no type: CUSTOM).

    Raises:
        AuthorizationError: ``"The body of acl is null"`` (no policies), ``"The policies is
            empty."`` (none with entries), or an entry's error.
    """
    if not info.policies:
        raise AuthorizationError("The body of acl is null")
    policies = []
    for p in info.policies:
        if not p.entries:
            continue  # Java's converter drops policies without entries
        ptype = by_name(PolicyType, p.policy_type) or PolicyType.CUSTOM
        policies.append(Policy(ptype, [_entry_of(e) for e in p.entries]))
    if not policies:
        raise AuthorizationError("The policies is empty.")
    return policies


def acl_info_of(subject_key: str, policies: list[Policy]) -> AclInfo:
    """``AclConverter.convertAcl(Acl)``."""
    return AclInfo(
        subject_key,
        [
            PolicyInfo(
                p.policy_type.java_name,
                [
                    PolicyEntryInfo(
                        e.resource.key,
                        [a.java_name for a in e.actions] or None,
                        list(e.source_ips) or None,
                        e.decision.java_name,
                    )
                    for e in p.entries
                ],
            )
            for p in policies
        ],
    )


def _blank(s: str | None) -> bool:
    return s is None or not s.strip()


class AuthMetadata:
    """The users and ACLs of one broker.

    Attributes:
        users: username -> :class:`User`.
        acls: subject key (``User:<name>``) -> its policies.
    """

    def __init__(self) -> None:
        self.users: dict[str, User] = {}
        self.acls: dict[str, list[Policy]] = {}

    # ------------------------------------------------------------------------------ users

    def get_user(self, username: str | None) -> User | None:
        """``getUser``. Raises AuthenticationError: blank username."""
        if _blank(username):
            raise AuthenticationError("username can not be blank")
        return self.users.get(username or "")

    def is_super_user(self, username: str) -> bool:
        """``isSuperUser``. Raises AuthenticationError: unknown user."""
        user = self.get_user(username)
        if user is None:
            raise AuthenticationError(f"User:{username} is not found")
        return user.user_type is UserType.SUPER

    def create_user(
        self,
        username: str | None,
        password: str | None,
        user_type: UserType | None = None,
        user_status: UserStatus | None = None,
    ) -> User:
        """``createUser``: type defaults to NORMAL, status to ENABLE.

        Raises:
            AuthenticationError: blank username or password, or ``"The user is existed"``.
        """
        if _blank(username):
            raise AuthenticationError("username can not be blank")
        if _blank(password):
            raise AuthenticationError("password can not be blank")
        assert username is not None
        if username in self.users:
            raise AuthenticationError("The user is existed")
        user = User(username, password, user_type or UserType.NORMAL, user_status or UserStatus.ENABLE)
        self.users[username] = user
        return user

    def update_user(
        self,
        username: str | None,
        password: str | None,
        user_type: UserType | None = None,
        user_status: UserStatus | None = None,
    ) -> User:
        """``updateUser``: the given non-blank fields replace the old ones.

        Raises:
            AuthenticationError: blank username, or ``"The user is not exist"``.
        """
        if _blank(username):
            raise AuthenticationError("username can not be blank")
        old = self.users.get(username or "")
        if old is None:
            raise AuthenticationError("The user is not exist")
        if not _blank(password):
            old.password = password
        if user_type is not None:
            old.user_type = user_type
        if user_status is not None:
            old.user_status = user_status
        return old

    def delete_user(self, username: str | None) -> None:
        """``deleteUser``: the user and its ACL. Raises AuthenticationError: blank username."""
        if _blank(username):
            raise AuthenticationError("username can not be blank")
        assert username is not None
        self.users.pop(username, None)
        self.acls.pop(f"User:{username}", None)

    def list_users(self, filter_: str | None = None) -> list[User]:
        """``listUser``: usernames containing ``filter_`` (all when blank), in key order."""
        names = sorted(self.users, key=lambda n: n.encode("utf-8"))
        return [self.users[n] for n in names if _blank(filter_) or (filter_ or "") in n]

    # ------------------------------------------------------------------------------- ACLs

    def _existing_subject(self, subject_key: str | None, message: str) -> str:
        username = subject_username(subject_key)
        if username is None:
            raise AuthorizationError("The subject is null.")
        if username not in self.users:
            raise AuthorizationError(message)
        return f"User:{username}"

    def put_acl(self, subject_key: str | None, info: AclInfo) -> list[Policy]:
        """``createAcl`` / ``updateAcl`` (identical in Java): merge ``info``'s policies into the
        subject's ACL (same type: entries of the same resource replaced, others appended).

        Args:
            subject_key: the header's subject; the body's ``subject`` wins when it names a user.

        Raises:
            AuthorizationError: a validation error, ``"The subject type is null."`` (no user
                subject), ``"The subject of User:x is not exist."``.
        """
        body_user = subject_username(info.subject)
        key = f"User:{body_user}" if body_user is not None else subject_key
        policies = policies_of(info)
        username = subject_username(key)
        if username is None:
            raise AuthorizationError("The subject type is null.")
        if username not in self.users:
            raise AuthorizationError(f"The subject of User:{username} is not exist.")
        key = f"User:{username}"
        old = self.acls.get(key)
        if old is None:
            self.acls[key] = policies
            return policies
        for new in policies:
            same = next((p for p in old if p.policy_type is new.policy_type), None)
            if same is None:
                old.append(new)
            else:
                same.update_entries(new.entries)
        return old

    def delete_acl(self, subject_key: str | None, policy_type: str | None = None, resource: str | None = None) -> None:
        """``deleteAcl``: one resource's entry (of the policy type, default CUSTOM), or the whole
        ACL when ``resource`` is blank; an ACL left without policies is removed.

        Raises:
            AuthorizationError: ``"The subject is null."``, ``"The subject is not exist."``,
                ``"The acl is not exist."``.
        """
        key = self._existing_subject(subject_key, "The subject is not exist.")
        old = self.acls.get(key)
        if old is None:
            raise AuthorizationError("The acl is not exist.")
        res = Resource.parse(resource)
        if res is None:
            del self.acls[key]
            return
        ptype = by_name(PolicyType, policy_type) or PolicyType.CUSTOM
        policy = next((p for p in old if p.policy_type is ptype), None)
        if policy is not None:
            policy.entries = [e for e in policy.entries if e.resource != res]
            if not policy.entries:
                old.remove(policy)
        if not old:
            del self.acls[key]

    def get_acl(self, subject_key: str | None) -> list[Policy] | None:
        """``getAcl``: the subject's policies, None when it has no ACL.

        Raises:
            AuthorizationError: ``"The subject is not exist."``.
        """
        key = self._existing_subject(subject_key, "The subject is not exist.")
        return self.acls.get(key)

    def list_acls(self, subject_filter: str | None = None, resource_filter: str | None = None) -> list[AclInfo]:
        """``listAcl``: subjects containing ``subject_filter``; entries whose resource key contains
        ``resource_filter`` (not filtered when the subject key itself contains it, as Java)."""
        result = []
        for key in sorted(self.acls, key=lambda k: k.encode("utf-8")):
            if not _blank(subject_filter) and (subject_filter or "") not in key:
                continue
            kept = []
            for p in self.acls[key]:
                entries = p.entries
                if not _blank(resource_filter) and (resource_filter or "") not in key:
                    entries = [e for e in entries if (resource_filter or "") in e.resource.key]
                if entries:
                    kept.append(Policy(p.policy_type, entries))
            if kept:
                result.append(acl_info_of(key, kept))
        return result

    # ------------------------------------------------------------------------ persistence

    def to_json(self) -> dict[str, Any]:
        """``{"users": [UserInfo…], "acls": [AclInfo…]}`` in key order."""
        return {
            "users": [user_info_of(u).to_dict() for u in self.list_users()],
            "acls": [acl_info_of(k, self.acls[k]).to_dict() for k in sorted(self.acls)],
        }

    @classmethod
    def from_json(cls, obj: Any) -> AuthMetadata:
        """Rebuild from :meth:`to_json`'s shape.

        Raises:
            ValueError: the shape or a value is wrong (the message names it).
        """
        if not isinstance(obj, dict) or not isinstance(obj.get("users"), list) or not isinstance(obj.get("acls"), list):
            raise ValueError("wrong shape: want {'users': [...], 'acls': [...]}")
        meta = cls()
        try:
            for u in obj["users"]:
                name, password, utype, status = user_of(UserInfo.from_dict(u))
                if not name:
                    raise ValueError(f"a user without username: {u!r}")
                meta.users[name] = User(name, password, utype or UserType.NORMAL, status or UserStatus.ENABLE)
            for a in obj["acls"]:
                info = AclInfo.from_dict(a)
                username = subject_username(info.subject)
                if username is None:
                    raise ValueError(f"an ACL without a user subject: {a!r}")
                meta.acls[f"User:{username}"] = policies_of(info)
        except (AuthorizationError, AuthenticationError) as err:
            raise ValueError(err.remark) from None
        except Exception as err:
            raise ValueError(str(err)) from None
        return meta
