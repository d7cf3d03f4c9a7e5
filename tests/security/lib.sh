# Shared fixture for the security suite (sourced, not run): the
# integration helpers plus real unprivileged users, created on first use.
#
# CI runs as root; these tests switch users, so without root they fail
# (never skip): a security check that did not run proved nothing.
. "$(dirname "${BASH_SOURCE[0]}")/../integration/lib.sh"

if [ "$(id -u)" -ne 0 ]; then
    not_ok "runs as root" "the security suite creates users and switches to them; run it as root"
    finish
fi

# Everything another user must reach lives under $W (the mktemp directory
# is private to root).
W="$TMP/world"
mkdir -p "$W"
chmod 755 "$TMP" "$W"

# ensure_user NAME: a system user with a home directory and its own group.
# The suite's tests run in parallel and all want the same users on a fresh
# machine: unserialised, two useradd runs once left a home owned by a uid
# that the user did not get. So users are made under one lock, and a home
# that is not its user's (left by an earlier user of that name) becomes
# its user's.
ensure_user() {
    local name=$1 home
    (
        flock 9
        id -u "$name" >/dev/null 2>&1 ||
            useradd --create-home --user-group --shell /bin/sh "$name" 2>/dev/null
        home=$(getent passwd "$name" | cut -d: -f6)
        if [ -d "$home" ] && [ "$(stat -c %u "$home")" != "$(id -u "$name")" ]; then
            chown -R "$name:$name" "$home"
        fi
    ) 9>/run/lock/ebb-test-users.lock
    id -u "$name" >/dev/null 2>&1
}

# The cast: two people who share one ebbd, and the service user ebbd runs
# as under the shipped unit.
for u in ebbsec-alice ebbsec-bob ebbsec-svc; do
    ensure_user "$u" || { not_ok "user $u exists" "useradd $u failed"; finish; }
done
ALICE_UID=$(id -u ebbsec-alice)
BOB_UID=$(id -u ebbsec-bob)
SVC_UID=$(id -u ebbsec-svc)

# as USER COMMAND...: runs COMMAND as USER with USER's groups and no
# capabilities; the test's environment (EBB_*) is kept, HOME and USER are
# USER's.
as() {
    local user=$1; shift
    setpriv --reuid="$user" --regid="$user" --init-groups -- \
        env HOME="$(getent passwd "$user" | cut -d: -f6)" USER="$user" "$@"
}
