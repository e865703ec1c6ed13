# Shared by the install scripts (sourced): the Debian packages of "$@" not installed yet,
# one per line (none: nothing printed).
missing_packages() {
    local p
    for p in "$@"; do
        if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
            echo "$p"
        fi
    done
}
