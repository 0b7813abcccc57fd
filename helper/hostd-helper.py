#!/usr/bin/python3
"""hostd's root helper: the few host changes the unprivileged daemon may not make itself.

It runs as root and listens on a Unix socket only the daemon may use: the socket file is mode 0660, owned by the
daemon's uid/gid, and each connection's peer uid (SO_PEERCRED) must be the daemon's. A request is ONE JSON line
{"action": name, "args": {...}}; the answer is ONE JSON line {"ok": true, "result": ...} or
{"ok": false, "error": code, "message": text, "status": http-status}; a streamed action (a package job) first sends
{"event": ...} lines, one per line of its output (see run_streaming). The action must be in ACTIONS (below); every
argument is checked by its validator before anything runs; the action runs a fixed program with an argument vector
(never a shell), a clean environment, a timeout and an output cap. Every request except the daemon's pings is
appended to the helper's own JSON-lines log. With --dry-run, actions that change the host answer the argument vector
they would run instead of running it (reads still run: they change nothing).

Why Python and not Node: the peer check needs getsockopt(SO_PEERCRED), which Node has no API for (it would take a
native addon, compiled and loaded as root). Python's standard library has it, so the helper loads no third-party code.
"""
import argparse, fcntl, json, os, pwd, re, shutil, socket, socketserver, struct, subprocess, sys, threading, time

MAX_REQUEST_BYTES = 64 * 1024
OUTPUT_CAP_BYTES = 1024 * 1024
SAFE_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'


class Refused(Exception):
    """A request the helper will not run; answered with `status`, and nothing runs."""

    def __init__(self, message, status=400, code='HOSTD_HELPER_INVALID_ARGUMENT'):
        super().__init__(message)
        self.status, self.code = status, code


# ---- Validators: (value, field name) -> value, or raise Refused (400). ----

FORBIDDEN = set(';&|$`<>()[]{}*?!~#\'"\\')


def text(pattern, max_len=64):
    """A string matching `pattern`: never a leading '-', a control character (newline, NUL) or a shell metacharacter."""
    rx = re.compile(pattern)

    def check(value, field):
        if not isinstance(value, str) or not 0 < len(value) <= max_len:
            raise Refused(f'{field} must be a string of 1 to {max_len} characters')
        if value.startswith('-'):
            raise Refused(f'{field} must not start with "-"')
        if any(ch in FORBIDDEN or ord(ch) < 32 or ord(ch) == 127 for ch in value):
            raise Refused(f'{field} holds a character that is not allowed')
        if not rx.fullmatch(value):
            raise Refused(f'{field} is not valid here')
        return value
    check.kind = 'string'
    return check


def integer(low, high):
    def check(value, field):
        if type(value) is not int or not low <= value <= high:
            raise Refused(f'{field} must be a whole number from {low} to {high}')
        return value
    check.kind = 'integer'
    return check


def boolean(value, field):
    if type(value) is not bool:
        raise Refused(f'{field} must be true or false')
    return value


boolean.kind = 'boolean'


def list_of(item, low, high):
    def check(value, field):
        if not isinstance(value, list) or not low <= len(value) <= high:
            raise Refused(f'{field} must be a list of {low} to {high} items')
        return [item(v, f'{field}[{i}]') for i, v in enumerate(value)]
    check.kind = f'list of {item.kind}'
    return check


def optional(check):
    """The argument may be left out; it is then absent from the checked arguments."""
    def wrapped(value, field):
        return check(value, field)
    wrapped.optional, wrapped.kind = True, check.kind
    return wrapped


def timezone(value, field):
    text(r'[A-Za-z0-9_+-]+(/[A-Za-z0-9_+-]+){0,2}')(value, field)
    if not os.path.isfile(os.path.join('/usr/share/zoneinfo', value)):
        raise Refused(f'{field} is not a known time zone')
    return value


timezone.kind = 'string'
OCTET = r'(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])'
ipv4 = text(rf'{OCTET}(\.{OCTET}){{3}}')
ipv4_cidr = text(rf'{OCTET}(\.{OCTET}){{3}}/(3[0-2]|[12]?[0-9])')
service = text(r'[A-Za-z0-9_][A-Za-z0-9 _.@:+-]*')          # a NetworkManager connection name (spaces allowed)
hostname = text(r'[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*', 253)
checkpoint = text(r'/org/freedesktop/NetworkManager/Checkpoint/[0-9]{1,9}')
display = text(r':[0-9]{1,3}')


def process_id(value, field):
    """A pid another program runs as: never 1 (init: signalling it brings the host down) nor this helper itself."""
    integer(2, 4194304)(value, field)
    if value == os.getpid():
        raise Refused(f'{field} is the root helper itself')
    return value


process_id.kind = 'integer'
signal_name = text(r'TERM|KILL', 4)


# ---- The allowlist: ONE table. Adding an action is one entry here. ----

class Action:
    def __init__(self, args, argv, timeout=30, reads=False, cap=OUTPUT_CAP_BYTES, any_exit=False, stream=False, env=None,
                 lock='packages'):
        self.args, self.argv, self.reads, self.cap = args, argv, reads, cap
        self.any_exit = any_exit  # answer {stdout, exitCode} whatever the exit code (a bit-mask status, e.g. smartctl)
        # A long job: its output lines go out as events while it runs, one such job per `lock` at a time (see
        # run_streaming). `env`: extra environment, a dict or a function of the checked arguments.
        self.stream, self.lock = stream, lock
        self.env = env if callable(env) else (lambda a, e=env or {}: e)
        self.timeout = timeout if callable(timeout) else (lambda a, t=timeout: t)


NM_FIELDS = 'connection.id,connection.uuid,connection.type,connection.interface-name,ipv4.method,ipv4.addresses,' \
            'ipv4.gateway,ipv4.dns,ipv4.ignore-auto-dns,GENERAL.STATE,GENERAL.DEVICES,IP4.ADDRESS,IP4.GATEWAY,IP4.DNS'
NM_PATH, NM_IFACE = '/org/freedesktop/NetworkManager', 'org.freedesktop.NetworkManager'


def nmcli(*argv):
    return ['nmcli', '--terse', '--escape', 'yes', *argv]


def nm_dbus(method, *argv):
    return ['gdbus', 'call', '--system', '--dest', NM_IFACE, '--object-path', NM_PATH, '--method', f'{NM_IFACE}.{method}', *argv]


# storage validators
# Storage settings are helper configuration (environment at helper start), never request arguments.
import tempfile  # noqa: E402 (storage: atomic file writes)
STORAGE = {
    'smb_conf': os.environ.get('HOSTD_HELPER_SMB_CONF', '/etc/samba/smb.conf'),
    # The ONE share file the helper owns; smb.conf includes it as the last line of [global].
    'smb_shares': os.environ.get('HOSTD_HELPER_SMB_SHARES', '/etc/samba/hostd-shares.conf'),
    # Folders that may be shared over SMB (colon-separated); a share path must lie inside one.
    'export_roots': [r for r in os.environ.get('HOSTD_HELPER_EXPORT_ROOTS', '/srv:/home:/media:/mnt').split(':') if r],
    'mount_root': os.environ.get('HOSTD_HELPER_MOUNT_ROOT', '/mnt/hostd'),
    'credentials_dir': os.environ.get('HOSTD_HELPER_CREDENTIALS_DIR', '/etc/hostd/credentials'),
    'owner': (0, 0),  # set in main(): the daemon's uid/gid
}
block_device = text(r'[a-z][a-z0-9]{0,31}')
smb_server = text(r'[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*', 253)
smb_remote_share = text(r'[A-Za-z0-9][A-Za-z0-9 ._-]{0,79}', 80)
smb_user = text(r'[A-Za-z0-9][A-Za-z0-9._@-]{0,63}')
smb_domain = text(r'[A-Za-z0-9][A-Za-z0-9.-]{0,63}')
mount_name = text(r'[a-z0-9][a-z0-9_-]{0,63}')
share_name = text(r'[A-Za-z0-9][A-Za-z0-9 _.-]{0,79}', 80)
share_comment = text(r'[A-Za-z0-9][A-Za-z0-9 _.,:/@+-]{0,119}', 120)
RESERVED_SHARES = {'global', 'homes', 'printers', 'print$', 'ipc$'}


def disk(value, field):
    block_device(value, field)
    if not os.path.isdir(f'/sys/block/{value}'):
        raise Refused(f'{field}: there is no disk {value}', 404, 'HOSTD_HELPER_NO_SUCH_DEVICE')
    return value


disk.kind = 'string'


def removable_disk(value, field):
    disk(value, field)
    with open(f'/sys/block/{value}/removable', encoding='ascii') as f:
        if f.read().strip() != '1':
            raise Refused(f'{field}: {value} is not a removable disk', 409, 'HOSTD_HELPER_NOT_REMOVABLE')
    return value


removable_disk.kind = 'string'


def secret(value, field):
    """A password: any printable text (no shell is involved), but no control character, which would add a line
    to the credentials file. Never logged (see `secret` in handle_request_line)."""
    if not isinstance(value, str) or not 0 < len(value) <= 256 or any(ord(ch) < 32 or ord(ch) == 127 for ch in value):
        raise Refused(f'{field} must be 1 to 256 characters without control characters')
    return value


secret.kind, secret.secret = 'secret', True
optional_secret = optional(secret)
optional_secret.secret = True  # optional() wraps the check; the log looks for the mark on the wrapper


def export_path(value, field):
    """An existing directory, canonical (no symlink, '..' or trailing '/'), inside the export roots, with nothing
    smb.conf would read as a substitution (%) or an escape."""
    if not isinstance(value, str) or not value.startswith('/') or len(value) > 1024 or \
            any(ord(ch) < 32 or ord(ch) == 127 or ch in '%\\' for ch in value):
        raise Refused(f'{field} must be an absolute path without control characters, "%" or "\\"')
    if os.path.realpath(value) != value:
        raise Refused(f'{field} must be a canonical path (no symlink, "..", or trailing "/")')
    if not os.path.isdir(value):
        raise Refused(f'{field} is not a directory')
    roots = [os.path.realpath(r) for r in STORAGE['export_roots']]
    if not any(value == r or value.startswith(r.rstrip('/') + '/') for r in roots):
        raise Refused(f'{field} is outside the folders that may be shared', 403, 'HOSTD_HELPER_PATH_REFUSED')
    return value


export_path.kind = 'path'
SHARE_KEYS = {'name', 'path', 'readOnly', 'guestAccess'}


def share_record(value, field):
    if not isinstance(value, dict) or not SHARE_KEYS <= set(value) or set(value) - SHARE_KEYS - {'comment'}:
        raise Refused(f'{field} must be an object with name, path, readOnly, guestAccess and optionally comment')
    record = {'name': share_name(value['name'], f'{field}.name'), 'path': export_path(value['path'], f'{field}.path'),
              'readOnly': boolean(value['readOnly'], f'{field}.readOnly'), 'guestAccess': boolean(value['guestAccess'], f'{field}.guestAccess')}
    if record['name'].lower() in RESERVED_SHARES:
        raise Refused(f'{field}.name is a reserved Samba section name')
    if 'comment' in value:
        record['comment'] = share_comment(value['comment'], f'{field}.comment')
    return record


share_record.kind = 'share'


def share_list(value, field):
    records = list_of(share_record, 0, 256)(value, field)
    names = [r['name'].lower() for r in records]
    if len(set(names)) != len(names):
        raise Refused(f'{field} names a share twice')
    return records


share_list.kind = 'list of share'


def write_atomically(path, content, mode):
    """Temp file in the same directory, fsync, rename: a reader sees the old file or the new one, never a part."""
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix='.hostd-')
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, 'w', encoding='utf-8') as f:
            f.write(content)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def smb_exports_argv(a):
    """Rewrites the helper's share file from the validated records, then asks smbd to reload its configuration."""
    out = ['# Written by hostd-helper for the storage plugin; edits here are replaced.\n']
    for s in a['shares']:
        out += [f"\n[{s['name']}]\n", f"   path = {s['path']}\n", f"   read only = {'yes' if s['readOnly'] else 'no'}\n",
                f"   guest ok = {'yes' if s['guestAccess'] else 'no'}\n", '   browseable = yes\n']
        if 'comment' in s:
            out.append(f"   comment = {s['comment']}\n")
    write_atomically(STORAGE['smb_shares'], ''.join(out), 0o644)
    return ['smbcontrol', '-s', STORAGE['smb_conf'], 'smbd', 'reload-config']


def credentials_file(name):
    return os.path.join(STORAGE['credentials_dir'], f'{name}.cred')


def cifs_mount_argv(a):
    """mount.cifs with a 0600 root-only credentials file: the password is never on a command line."""
    if 'password' in a and 'username' not in a:
        raise Refused('password needs a username')
    target = os.path.join(STORAGE['mount_root'], a['name'])
    os.makedirs(target, mode=0o755, exist_ok=True)
    uid, gid = STORAGE['owner']
    options = [f'uid={uid}', f'gid={gid}', 'file_mode=0644', 'dir_mode=0755', 'nosuid', 'nodev', 'noexec',
               'ro' if a.get('readOnly') else 'rw']
    if 'username' in a:
        os.makedirs(STORAGE['credentials_dir'], mode=0o700, exist_ok=True)
        lines = [f"username={a['username']}", f"password={a.get('password', '')}"] + ([f"domain={a['domain']}"] if 'domain' in a else [])
        write_atomically(credentials_file(a['name']), '\n'.join(lines) + '\n', 0o600)
        options.insert(0, f"credentials={credentials_file(a['name'])}")
    else:
        options.insert(0, 'guest')
    return ['mount', '-t', 'cifs', f"//{a['server']}/{a['share']}", target, '-o', ','.join(options)]


def cifs_unmount_argv(a):
    if os.path.exists(credentials_file(a['name'])):
        os.unlink(credentials_file(a['name']))  # mount.cifs read it at mount time; the kernel keeps the session
    return ['umount', os.path.join(STORAGE['mount_root'], a['name'])]


# packages: apt-get with an argument vector. A name is checked against Debian's package-name rules (policy 5.6.1)
# plus an optional ":arch", and refused when apt would read it as something else: a leading "-" (an option, e.g.
# -oAPT::Update::Pre-Invoke::=/bin/sh), a trailing "+" or "-" (install foo- REMOVES foo), "?" or "~" (an apt
# pattern: ?essential), "=" or "/" (a version or release pick), "*" (a glob), a path (./x.deb). The names always
# follow "--", and APT::Cmd::Pattern-Only=1 stops apt-get from trying a name that matches no package as a POSIX
# regex ("fo.o" would otherwise pick every package matching it).
package_name_text = text(r'[a-z0-9][a-z0-9+.-]+(:[a-z0-9]+(-[a-z0-9]+)*)?', 128)


def package_name(value, field):
    if isinstance(value, str) and value.split(':')[0].endswith(('+', '-')):
        raise Refused(f'{field} must not end with "+" or "-" (apt would read it as install or remove)')
    return package_name_text(value, field)


package_name.kind = 'string'


def apt_get(verb, *flags):
    """The one apt-get command line: non-interactive (DEBIAN_FRONTEND in the action's env), machine-readable progress
    on fd 3, a bounded wait for dpkg's lock, the existing configuration files kept, names after "--"."""
    return lambda a: ['apt-get', '-y', '-q', '-o', 'APT::Status-Fd=3', '-o', 'APT::Cmd::Pattern-Only=1',
                      '-o', 'DPkg::Lock::Timeout=60', '-o', 'Dpkg::Options::=--force-confdef',
                      '-o', 'Dpkg::Options::=--force-confold', verb, *flags, '--', *a.get('packages', [])]


# Two hours: apt downloads and maintainer scripts may be slow; killing dpkg midway is what breaks a system.
PACKAGE_JOB = {'timeout': 7200, 'stream': True, 'env': {'DEBIAN_FRONTEND': 'noninteractive'}}
package_names = list_of(package_name, 1, 50)

def absolute_path(value, field):
    """An absolute path (it cannot be read as an option), without control characters."""
    if not isinstance(value, str) or not value.startswith('/') or len(value) > 4096 or \
            any(ord(ch) < 32 or ord(ch) == 127 for ch in value):
        raise Refused(f'{field} must be an absolute path without control characters')
    return value


absolute_path.kind = 'path'


def restic_repository(value, field):
    """A restic repository restic opens without running anything: a folder, a REST URL (its credentials in it, so never
    logged) or S3. Never sftp: that backend runs ssh, with options of the caller's choosing."""
    if not isinstance(value, str) or len(value) > 2048 or any(ord(ch) < 32 or ord(ch) == 127 for ch in value):
        raise Refused(f'{field} must be a restic repository without control characters')
    if not re.fullmatch(r'/.*|rest:https?://\S+|s3:https?://\S+', value):
        raise Refused(f'{field} must be a folder, rest:http(s)://... or s3:http(s)://... (sftp is not run as root)')
    return value


restic_repository.kind, restic_repository.secret = 'secret', True


def daemon_file(value, field):
    """A file the daemon's user owns and nobody else may read (the repository password file it wrote)."""
    absolute_path(value, field)
    try:
        st = os.lstat(value)
    except OSError:
        raise Refused(f'{field} does not exist')
    if not os.path.isfile(value) or os.path.islink(value) or st.st_uid != STORAGE['owner'][0] or st.st_mode & 0o077:
        raise Refused(f"{field} must be a regular file of the daemon's user, mode 0600", 403, 'HOSTD_HELPER_PATH_REFUSED')
    return value


daemon_file.kind = 'path'
restic_tag = text(r'[A-Za-z0-9][A-Za-z0-9:._-]*', 200)
aws_key_id = text(r'[A-Za-z0-9+/=_.]+', 256)
aws_region = text(r'[a-z0-9-]+', 64)


def restic_backup_argv(a):
    """restic as the daemon's user, with the one capability to read whatever it is given (CAP_DAC_READ_SEARCH, as
    restic's own documentation advises for backups by an unprivileged user): the repository, its cache and its locks
    are written as the daemon's user, so its own restic (snapshots, restore, forget) goes on using them."""
    uid, gid = STORAGE['owner']
    return ['setpriv', f'--reuid={uid}', f'--regid={gid}', '--clear-groups', '--inh-caps=-all,+dac_read_search',
            '--ambient-caps=-all,+dac_read_search', '--', 'restic', 'backup', '--json', '--cache-dir', a['cacheDir'],
            *[x for t in a.get('tags', []) for x in ('--tag', t)], *[x for e in a.get('excludes', []) for x in ('--exclude', e)],
            '--', *a['paths']]


def home_of(uid):
    try:
        return pwd.getpwuid(uid).pw_dir
    except KeyError:
        return '/nonexistent'


def restic_env(a):
    env = {'RESTIC_REPOSITORY': a['repository'], 'RESTIC_PASSWORD_FILE': a['passwordFile'], 'RESTIC_PROGRESS_FPS': '2',
           'HOME': home_of(STORAGE['owner'][0])}
    if 'awsAccessKeyId' in a:
        env['AWS_ACCESS_KEY_ID'] = a['awsAccessKeyId']
    if 'awsSecretAccessKey' in a:
        env['AWS_SECRET_ACCESS_KEY'] = a['awsSecretAccessKey']
    if 'awsRegion' in a:
        env['AWS_DEFAULT_REGION'] = a['awsRegion']
    return env


ACTIONS = {
    # NetworkManager (network plugin). A connection is always named with the `id` keyword, so a name can never be
    # read as another nmcli keyword.
    'nm.list': Action({}, lambda a: nmcli('--fields', 'NAME,UUID,TYPE,DEVICE,ACTIVE', 'connection', 'show'), reads=True),
    'nm.show': Action({'service': service}, lambda a: nmcli('--fields', NM_FIELDS, 'connection', 'show', 'id', a['service']), reads=True),
    'nm.setDns': Action({'service': service, 'servers': list_of(ipv4, 0, 3)}, lambda a: nmcli(
        'connection', 'modify', 'id', a['service'], 'ipv4.dns', ','.join(a['servers']),
        'ipv4.ignore-auto-dns', 'yes' if a['servers'] else 'no')),
    'nm.setIpv4Manual': Action({'service': service, 'address': ipv4_cidr, 'gateway': optional(ipv4)}, lambda a: nmcli(
        'connection', 'modify', 'id', a['service'], 'ipv4.method', 'manual', 'ipv4.addresses', a['address'],
        'ipv4.gateway', a.get('gateway', ''))),
    'nm.setIpv4Dhcp': Action({'service': service}, lambda a: nmcli(
        'connection', 'modify', 'id', a['service'], 'ipv4.method', 'auto', 'ipv4.addresses', '', 'ipv4.gateway', '')),
    'nm.setAutoconnect': Action({'service': service, 'on': boolean}, lambda a: nmcli(
        'connection', 'modify', 'id', a['service'], 'connection.autoconnect', 'yes' if a['on'] else 'no')),
    'nm.up': Action({'service': service}, lambda a: nmcli('--wait', '20', 'connection', 'up', 'id', a['service']), timeout=25),
    'nm.down': Action({'service': service}, lambda a: nmcli('--wait', '20', 'connection', 'down', 'id', a['service']), timeout=25),
    # Confirm-or-revert: NetworkManager itself rolls every device back unless the checkpoint is destroyed in time,
    # so the revert happens even if the daemon or this helper dies meanwhile.
    'nm.checkpoint': Action({'seconds': integer(1, 600)}, lambda a: nm_dbus('CheckpointCreate', '@ao []', str(a['seconds']), '0')),
    'nm.confirm': Action({'checkpoint': checkpoint}, lambda a: nm_dbus('CheckpointDestroy', a['checkpoint'])),
    'nm.rollback': Action({'checkpoint': checkpoint}, lambda a: nm_dbus('CheckpointRollback', a['checkpoint'])),
    # Per-process network rates (metrics plugin).
    'net.processTraffic': Action({'seconds': integer(1, 10)}, lambda a: ['nethogs', '-a', '-t', '-d', '1', '-c', str(a['seconds'])],
                                 timeout=lambda a: a['seconds'] + 5, reads=True, cap=256 * 1024),
    # End a process (metrics plugin's Processes page): procps kill, the signal by name, the pid after "--".
    'process.signal': Action({'pid': process_id, 'signal': signal_name}, lambda a: ['kill', '-s', a['signal'], '--', str(a['pid'])]),
    # Power (system plugin).
    'power.sleep': Action({}, lambda a: ['systemctl', 'suspend']),
    'power.displaySleep': Action({'display': display}, lambda a: ['xset', '-display', a['display'], 'dpms', 'force', 'off']),
    'power.restart': Action({}, lambda a: ['systemctl', 'reboot']),
    'power.shutdown': Action({}, lambda a: ['systemctl', 'poweroff']),
    'daemon.restart': Action({}, lambda a: ['systemctl', 'restart', 'hostd.service']),
    # Admin Privileges (privileged plugin).
    'ssh.set': Action({'on': boolean}, lambda a: ['systemctl', 'enable' if a['on'] else 'disable', '--now', 'ssh.service']),
    'hostname.set': Action({'name': hostname}, lambda a: ['hostnamectl', 'set-hostname', a['name']]),
    'timezone.set': Action({'zone': timezone}, lambda a: ['timedatectl', 'set-timezone', a['zone']]),
    'ntp.set': Action({'on': boolean}, lambda a: ['timedatectl', 'set-ntp', 'true' if a['on'] else 'false']),
    # Storage (storage plugin).
    'storage.smart': Action({'device': disk}, lambda a: ['smartctl', '-j', '-a', f"/dev/{a['device']}"], timeout=60, reads=True, any_exit=True),
    'storage.eject': Action({'device': removable_disk}, lambda a: ['eject', f"/dev/{a['device']}"], timeout=60),
    'storage.mount': Action({'server': smb_server, 'share': smb_remote_share, 'name': mount_name, 'username': optional(smb_user),
                             'password': optional_secret, 'domain': optional(smb_domain), 'readOnly': optional(boolean)},
                            cifs_mount_argv, timeout=60),
    'storage.unmount': Action({'name': mount_name}, cifs_unmount_argv, timeout=60),
    'storage.exports.write': Action({'shares': share_list}, smb_exports_argv),
    # Packages (packages plugin): long jobs, streamed (see run_streaming), one at a time. upgrade without names
    # upgrades every package that can be upgraded without removing or adding any.
    'pkg.refresh': Action({}, apt_get('update'), **PACKAGE_JOB),
    'pkg.install': Action({'packages': package_names}, apt_get('install'), **PACKAGE_JOB),
    'pkg.upgrade': Action({'packages': optional(package_names)},
                          lambda a: apt_get('install', '--only-upgrade')(a) if a.get('packages') else apt_get('upgrade')(a), **PACKAGE_JOB),
    'pkg.remove': Action({'packages': package_names}, apt_get('remove'), **PACKAGE_JOB),
    'pkg.purge': Action({'packages': package_names}, apt_get('purge'), **PACKAGE_JOB),
    # What a removal would take with it, asked before it runs: apt-get's simulation (-s) changes nothing and takes no
    # lock; its "Remv <name> [<version>]" lines name every package it would remove. Any exit: apt's own refusal
    # (an unknown package) is the answer's stderr.
    'pkg.simulateRemove': Action({'packages': package_names}, lambda a: [
        'apt-get', '-s', '-q', '-o', 'APT::Cmd::Pattern-Only=1', 'remove', '--', *a['packages']],
        timeout=120, reads=True, any_exit=True),
    # Backups (backups plugin): `restic backup` of paths the daemon's user may not read (restic_backup_argv). Streamed:
    # restic's --json lines are the events; one backup at a time (its own lock, not the package jobs'); up to a day.
    'backups.restic-backup': Action({'repository': restic_repository, 'passwordFile': daemon_file, 'cacheDir': absolute_path,
                                     'paths': list_of(absolute_path, 1, 200), 'excludes': optional(list_of(absolute_path, 0, 200)),
                                     'tags': optional(list_of(restic_tag, 0, 50)), 'awsAccessKeyId': optional(aws_key_id),
                                     'awsSecretAccessKey': optional_secret, 'awsRegion': optional(aws_region)},
                                    restic_backup_argv, timeout=86400, stream=True, env=restic_env, lock='backups',
                                    cap=256 * 1024 * 1024),
}


def validate(action, args):
    if not isinstance(args, dict):
        raise Refused('args must be an object')
    unknown = set(args) - set(action.args)
    if unknown:
        raise Refused(f'unknown argument {sorted(unknown)[0]}')
    checked = {}
    for field, check in action.args.items():
        if field in args:
            checked[field] = check(args[field], field)
        elif not getattr(check, 'optional', False):
            raise Refused(f'{field} is required')
    return checked


# ---- Running a program: argument vector, clean environment, timeout, bounded output. ----

def drain(pipe, cap, out):
    """Keeps the first `cap` bytes and discards the rest, so a chatty program neither blocks nor fills memory."""
    kept = bytearray()
    for chunk in iter(lambda: pipe.read(65536), b''):
        if len(kept) < cap:
            kept += chunk[:cap - len(kept)]
    out.append(bytes(kept))


def run(argv, timeout, cap, env):
    program = shutil.which(argv[0], path=SAFE_PATH)
    if not program:
        raise Refused(f'{argv[0]} is not installed on this host', 501, 'HOSTD_HELPER_PROGRAM_MISSING')
    proc = subprocess.Popen([program, *argv[1:]], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=env, close_fds=True, start_new_session=True)
    stdout, stderr = [], []
    readers = [threading.Thread(target=drain, args=(proc.stdout, cap, stdout)),
               threading.Thread(target=drain, args=(proc.stderr, 16 * 1024, stderr))]
    for reader in readers:
        reader.start()
    try:
        code = proc.wait(timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        proc.wait()
        code = None
    for reader in readers:
        reader.join()
    return code, stdout[0].decode('utf-8', 'replace'), stderr[0].decode('utf-8', 'replace')


def high_fd(fd):
    """The same pipe end on a descriptor above 9, so the child's dup2 onto 0-3 never meets one of its sources."""
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return moved


def run_streaming(argv, timeout, cap, env, emit):
    """Runs a long job (apt-get) and hands each line to emit as it comes: {"stream": "stdout" | "stderr" | "status",
    "text": line}, where "status" is the program's fd 3 (apt's APT::Status-Fd=3). Lines past `cap` bytes are read
    and dropped. Returns the exit code, or None when the timeout killed the job's process group.
    posix_spawn, not subprocess: fd 3 must be the status pipe exactly, which subprocess cannot arrange."""
    program = shutil.which(argv[0], path=SAFE_PATH)
    if not program:
        raise Refused(f'{argv[0]} is not installed on this host', 501, 'HOSTD_HELPER_PROGRAM_MISSING')
    pipes = {name: tuple(high_fd(fd) for fd in os.pipe()) for name in ('stdout', 'stderr', 'status')}
    null = high_fd(os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC))
    wiring = [(os.POSIX_SPAWN_DUP2, null, 0)] + [(os.POSIX_SPAWN_DUP2, pipes[name][1], fd)
                                                 for name, fd in (('stdout', 1), ('stderr', 2), ('status', 3))]
    try:
        pid = os.posix_spawn(program, [program, *argv[1:]], env, file_actions=wiring, setsid=True)
    except BaseException:
        for r, _ in pipes.values():
            os.close(r)
        raise
    finally:
        for _, w in pipes.values():
            os.close(w)
        os.close(null)
    budget = [cap]

    def pump(name, fd):
        with open(fd, 'rb') as pipe:
            for raw in iter(lambda: pipe.readline(8192), b''):
                budget[0] -= len(raw)
                if budget[0] >= 0:
                    emit({'stream': name, 'text': raw.decode('utf-8', 'replace').rstrip('\r\n')})

    readers = [threading.Thread(target=pump, args=(name, r)) for name, (r, _) in pipes.items()]
    timed_out = threading.Event()

    def kill_group():
        timed_out.set()
        try:
            os.killpg(pid, 9)
        except ProcessLookupError:
            pass

    timer = threading.Timer(timeout, kill_group)
    for thread in [*readers, timer]:
        thread.start()
    os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)  # exited but not reaped: the timer cannot signal a reused pid
    timer.cancel()
    timer.join()
    _, status = os.waitpid(pid, 0)
    for reader in readers:
        reader.join()
    return None if timed_out.is_set() else os.waitstatus_to_exitcode(status)


# ---- The server. ----

class Helper(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True

    def __init__(self, opts):
        self.opts, self.log_lock = opts, threading.Lock()
        # Held while a streamed job runs, one per kind: one package job at a time (dpkg has one database), one backup.
        self.job_locks = {'packages': threading.Lock(), 'backups': threading.Lock()}
        self.env = {'PATH': SAFE_PATH, 'LC_ALL': 'C', 'LANG': 'C'}
        if opts.dbus_system_bus:  # a helper setting, never a request argument
            self.env['DBUS_SYSTEM_BUS_ADDRESS'] = opts.dbus_system_bus
        if opts.apt_config:  # likewise: the tests' isolated apt and dpkg root
            self.env['APT_CONFIG'] = opts.apt_config
        if os.path.exists(opts.socket) and not os.path.isfile(opts.socket):
            os.unlink(opts.socket)  # a stale socket from a previous run
        old = os.umask(0o177)  # nobody but root can connect between bind and chmod/chown
        try:
            super().__init__(opts.socket, Connection)
        finally:
            os.umask(old)
        os.chown(opts.socket, opts.uid, opts.gid)
        os.chmod(opts.socket, 0o660)

    def log(self, entry):
        line = json.dumps({'time': time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime()), **entry}) + '\n'
        # Opened per line (so logrotate can move it) and created 0600: arguments are nobody else's business.
        with self.log_lock, open(os.open(self.opts.log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600), 'a', encoding='utf-8') as f:
            f.write(line)

    def handle_request_line(self, request, entry, emit):
        name, args = request.get('action'), request.get('args', {})
        entry['action'] = name
        if name == 'ping':
            return {'pong': True, 'dryRun': self.opts.dry_run}
        action = ACTIONS.get(name) if isinstance(name, str) else None
        if action is None:
            raise Refused(f'unknown action {str(name)[:64]!r}', 400, 'HOSTD_HELPER_UNKNOWN_ACTION')
        # A secret argument (a validator marked `secret`) is never logged.
        entry['args'] = {f: '<redacted>' if getattr(action.args.get(f), 'secret', False) else v for f, v in args.items()} if isinstance(args, dict) else args
        checked = validate(action, args)
        argv = action.argv(checked)
        entry['argv'] = argv
        if self.opts.dry_run and not action.reads:
            entry['outcome'] = 'dry-run'
            return {'dryRun': True, 'argv': argv}
        if action.stream:
            return self.run_job(action, checked, argv, entry, emit)
        code, stdout, stderr = run(argv, action.timeout(checked), action.cap, self.env)
        entry['exitCode'] = code
        if code is None:
            raise Refused(f'{argv[0]} did not finish in time', 504, 'HOSTD_HELPER_TIMEOUT')
        if action.any_exit:
            return {'stdout': stdout, 'stderr': stderr, 'exitCode': code}
        if code != 0:
            detail = (stderr.strip() or stdout.strip()).splitlines()[-1:] or ['no output']
            raise Refused(f'{argv[0]} failed (exit {code}): {detail[0][:300]}', 500, 'HOSTD_HELPER_ACTION_FAILED')
        return {'stdout': stdout}

    def run_job(self, action, checked, argv, entry, emit):
        """A streamed job: events while it runs, then {"exitCode": n} whatever n is (the caller reports a failed
        apt-get with its output). It runs to its end even when the daemon goes away."""
        lock = self.job_locks[action.lock]
        if not lock.acquire(blocking=False):
            what = 'package job' if action.lock == 'packages' else 'backup'
            raise Refused(f'another {what} is running; try again when it has finished', 409, 'HOSTD_HELPER_BUSY')
        try:
            code = run_streaming(argv, action.timeout(checked), action.cap, {**self.env, **action.env(checked)}, emit)
        finally:
            lock.release()
        entry['exitCode'] = code
        if code is None:
            raise Refused(f'{argv[0]} did not finish in time', 504, 'HOSTD_HELPER_TIMEOUT')
        if code != 0:
            entry['outcome'] = 'failed'
        return {'exitCode': code}


class Connection(socketserver.StreamRequestHandler):
    gone = False  # the daemon stopped reading: later events are dropped, the job goes on
    write_lock = None

    def emit(self, event):
        """One {"event": ...} line before the answer (streamed jobs only). Never blocks the job for more than the
        socket's 10 s timeout: a daemon that stops reading just stops getting events."""
        if self.gone:
            return
        with self.write_lock:
            try:
                self.wfile.write((json.dumps({'event': event}) + '\n').encode())
            except OSError:
                self.gone = True

    def handle(self):
        self.write_lock = threading.Lock()
        started = time.monotonic()
        pid, uid, gid = struct.unpack('3i', self.request.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize('3i')))
        entry = {'peer': {'pid': pid, 'uid': uid, 'gid': gid}}
        try:
            if uid != self.server.opts.uid:
                raise Refused(f'uid {uid} may not use the helper', 403, 'HOSTD_HELPER_PEER_REFUSED')
            self.request.settimeout(10)
            line = self.rfile.readline(MAX_REQUEST_BYTES + 1)
            if len(line) > MAX_REQUEST_BYTES or not line.endswith(b'\n'):
                raise Refused('a request is one JSON line of at most 64 KiB')
            try:
                request = json.loads(line)
            except ValueError:
                raise Refused('the request is not JSON')
            if not isinstance(request, dict):
                raise Refused('the request must be a JSON object')
            answer = {'ok': True, 'result': self.server.handle_request_line(request, entry, self.emit)}
            entry.setdefault('outcome', 'ok')
        except Refused as err:
            answer = {'ok': False, 'error': err.code, 'message': str(err), 'status': err.status}
            entry.update(outcome='refused' if err.status < 500 else 'failed', status=err.status, error=err.code, message=str(err))
        except Exception as err:  # never leave the daemon without an answer
            answer = {'ok': False, 'error': 'HOSTD_HELPER_INTERNAL', 'message': 'the helper failed; see its log', 'status': 500}
            entry.update(outcome='failed', status=500, error='HOSTD_HELPER_INTERNAL', message=repr(err)[:300])
        entry['ms'] = round((time.monotonic() - started) * 1000)
        if not (entry.get('action') == 'ping' and answer['ok']):
            self.server.log(entry)
        try:
            self.wfile.write((json.dumps(answer) + '\n').encode())
        except OSError:
            pass  # the daemon went away; the log has the request


def main(argv=None):
    env = os.environ.get
    p = argparse.ArgumentParser(description="hostd's root helper")
    p.add_argument('--socket', default=env('HOSTD_HELPER_SOCKET', '/run/hostd/helper.sock'))
    p.add_argument('--user', default=env('HOSTD_HELPER_USER'), help="the daemon's user name (sets --uid and --gid)")
    p.add_argument('--uid', type=int, default=env('HOSTD_HELPER_UID'), help="the daemon's uid: owns the socket, the only peer served")
    p.add_argument('--gid', type=int, default=env('HOSTD_HELPER_GID'), help="the daemon's gid: group of the socket")
    p.add_argument('--log', default=env('HOSTD_HELPER_LOG', '/var/log/hostd/helper.log'))
    p.add_argument('--dbus-system-bus', default=env('HOSTD_HELPER_DBUS_SYSTEM_BUS'), help='D-Bus system bus address for nmcli/gdbus')
    p.add_argument('--apt-config', default=env('HOSTD_HELPER_APT_CONFIG'), help='APT_CONFIG for apt-get (tests: an isolated root)')
    p.add_argument('--dry-run', action='store_true', default=env('HOSTD_HELPER_DRY_RUN') == '1')
    p.add_argument('--describe', action='store_true', help='print the allowlist as JSON and exit')
    opts = p.parse_args(argv)
    if opts.describe:
        print(json.dumps({name: {'reads': a.reads, 'args': {f: c.kind for f, c in a.args.items()}} for name, a in ACTIONS.items()}))
        return 0
    if opts.user:
        entry = pwd.getpwnam(opts.user)
        opts.uid, opts.gid = entry.pw_uid, entry.pw_gid
    if opts.uid is None or opts.gid is None:
        p.error('--user, or --uid and --gid (the daemon user), are required')
    opts.uid, opts.gid = int(opts.uid), int(opts.gid)
    STORAGE['owner'] = (opts.uid, opts.gid)  # network shares are mounted as the daemon's files
    server = Helper(opts)
    print(f'hostd-helper: listening on {opts.socket} for uid {opts.uid}{" (dry run)" if opts.dry_run else ""}', flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == '__main__':
    sys.exit(main())
