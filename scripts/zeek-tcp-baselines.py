#!/usr/bin/env python3
"""Writes pipeline/testdata/zeek_conn_tcp.tsv: every TCP row of every conn.log
baseline in a Zeek checkout whose test reads one trace (zeek ... -r $TRACES/X)
that the shared captures hold, in groundtruth/zeek_conn.tsv's columns.
Tests that filter packets on purpose (a BPF filter) are left out.

usage: zeek-tcp-baselines.py ZEEK_GIT_DIR COMMIT SHARED_ZEEK_DIR > pipeline/testdata/zeek_conn_tcp.tsv
"""
import os, re, subprocess, sys

repo, commit, local = sys.argv[1:4]


def git(*args):
    return subprocess.run(['git', '-C', repo, *args], capture_output=True, text=True, check=True).stdout


def show(path):
    return git('show', commit + ':' + path)


files = git('ls-tree', '-r', '--name-only', commit, 'testing/btest').split('\n')
baselines = [f for f in files if f.startswith('testing/btest/Baseline/') and f.endswith('/conn.log')]
tests = {f for f in files if not f.startswith(('testing/btest/Baseline/', 'testing/btest/Traces/'))}
# Renamed id fields (the logging framework's field-name-map and scope_sep tests).
alias = {'src': 'id.orig_h', 'src_ip': 'id.orig_h', 'id_orig_h': 'id.orig_h',
         'src_port': 'id.orig_p', 'id_orig_p': 'id.orig_p',
         'dst': 'id.resp_h', 'dst_ip': 'id.resp_h', 'id_resp_h': 'id.resp_h',
         'dst_port': 'id.resp_p', 'id_resp_p': 'id.resp_p'}
filters = ('restrict_filters', 'capture_filters', 'precompile_pcap_filter', 'install_pcap_filter')

print('# Zeek\'s TCP connections for the shared captures, from zeek/zeek\'s btest conn.log baselines at ' + commit + '.')
print('# Made by scripts/zeek-tcp-baselines.py; the columns are groundtruth/zeek_conn.tsv\'s. Tests with a BPF filter are left out.')
print('\t'.join(['trace', 'zeek_test', 'baseline_file', 'zeek_cmd', 'uid', 'ts', 'orig_h', 'orig_p', 'resp_h', 'resp_p', 'proto',
                 'service', 'conn_state', 'history', 'orig_pkts', 'resp_pkts', 'orig_bytes', 'resp_bytes', 'missed_bytes']))
for b in baselines:
    parts = b.split('/')[3].split('.')
    test = None
    for ext in ('.zeek', '.test', ''):
        for k in range(len(parts)):
            p = 'testing/btest/' + '/'.join(parts[:k + 1]) + ('.' + '.'.join(parts[k + 1:]) if k + 1 < len(parts) else '') + ext
            if p in tests:
                test = p
                break
        if test:
            break
    if not test:
        continue
    src = show(test)
    cmds = [l for l in src.splitlines() if re.search(r'@TEST-EXEC:.*zeek .*-r', l)]
    if len(cmds) != 1:
        continue
    cmd = cmds[0].split('@TEST-EXEC:', 1)[1].strip()
    m = re.search(r'-r\s+\$\{?TRACES\}?/(\S+)', cmd)
    if not m or not os.path.exists(os.path.join(local, m.group(1))):
        continue
    if ' -f ' in cmd or any(f in src for f in filters):
        continue
    fields = None
    for line in show(b).splitlines():
        if line.startswith('#fields'):
            fields = line.split('\t')[1:]
        elif not line.startswith('#') and fields:
            r = dict(zip(fields, line.split('\t')))
            if r.get('proto') != 'tcp':
                continue
            for a, k in alias.items():
                if a in r:
                    r[k] = r[a]
            g = lambda k: r.get(k, '-')
            print('\t'.join(['zeek/' + m.group(1), test[len('testing/btest/'):], b[len('testing/btest/'):], cmd, g('uid'), g('ts'),
                             r.get('id.orig_h', ''), r.get('id.orig_p', ''), r.get('id.resp_h', ''), r.get('id.resp_p', ''), 'tcp',
                             g('service'), g('conn_state'), g('history'), g('orig_pkts'), g('resp_pkts'), g('orig_bytes'),
                             g('resp_bytes'), g('missed_bytes')]))
