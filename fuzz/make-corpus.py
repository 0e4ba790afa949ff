#!/usr/bin/env python3
"""Writes fuzz/corpus/<target>/ seeds (run from the repository root; the
output is committed, so this runs only when the seeds change). Copies real
files of the repository and writes .npy files and checkpoints by hand (no
numpy needed)."""
import os, shutil, struct, sys, json, glob

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
out = os.path.join(root, 'fuzz', 'corpus')

def put(target, name, data):
    d = os.path.join(out, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), 'wb') as f:
        f.write(data)

def copy(target, paths):
    for p in paths:
        with open(os.path.join(root, p), 'rb') as f:
            put(target, os.path.basename(p), f.read())

def npy(descr, shape, payload, version=1):
    s = ', '.join(str(x) for x in shape) + (',' if len(shape) == 1 else '')
    d = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (descr, s)
    pre = 10 if version == 1 else 12
    total = (pre + len(d) + 1 + 63) // 64 * 64
    d = d + ' ' * (total - pre - len(d) - 1) + '\n'
    head = b'\x93NUMPY' + bytes([version, 0])
    head += struct.pack('<H' if version == 1 else '<I', len(d))
    return head + d.encode() + payload

def f32(*v): return struct.pack('<%df' % len(v), *v)
def f64(*v): return struct.pack('<%dd' % len(v), *v)

# manifest: the runtime tests' manifests
copy('manifest', sorted(glob.glob('runtime/test/*.manifest.json', root_dir=root)))

# npy: every dtype, scalar, 0-d, 1-d, 2-d, empty, version 2.0, the tests'
put('npy', 'f32-2x3.npy', npy('<f4', [2, 3], f32(1, 2, 3, 4, 5, 6)))
put('npy', 'f64-4.npy', npy('<f8', [4], f64(1, -2, 0.5, 1e300)))
put('npy', 'f16-2.npy', npy('<f2', [2], b'\x00\x3c\x00\xc0'))
put('npy', 'bf16-2.npy', npy('<u2', [2], b'\x80\x3f\x00\x40'))
put('npy', 'i64-2x2.npy', npy('<i8', [2, 2], struct.pack('<4q', 1, -1, 2**62, 0)))
put('npy', 'i32-scalar.npy', npy('<i4', [], struct.pack('<i', 7)))
put('npy', 'i8-3.npy', npy('|i1', [3], b'\x01\xff\x7f'))
put('npy', 'b1-2.npy', npy('|b1', [2], b'\x01\x00'))
put('npy', 'f32-empty.npy', npy('<f4', [0, 4], b''))
put('npy', 'f32-v2.npy', npy('<f4', [1, 1, 2], f32(0.25, 0.5), version=2))
copy('npy', ['test/Runtime/Inputs/bert-mask-4x1x5.npy',
             'test/Runtime/Inputs/embedding-ids-bad.npy'])

# checkpoint: byte 0 picks the manifest of fuzz/targets/FuzzCheckpoint.cpp
# (0 sgd, 1 momentum, 2 adamw); then the files, separated by "\n@@\n":
# latest, checkpoint.json, optimizer.json, loss.npy, weight_1.npy,
# weight_2.npy, momentum_1/2, adam_m_1/2, adam_v_1/2.
SEP = b'\n@@\n'
def fnv1a64(data):
    h = 0xcbf29ce484222325
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return '%016x' % h
def checkpoint(opt, step):
    """A checkpoint of format_version 1, as pipeopt-run writes it: the size
    and FNV-1a checksum of every file in checkpoint.json, so that fuzzed
    inputs get past the checksums into the field checks."""
    names = ['sgd', 'momentum', 'adamw']
    oj = json.dumps({'optimizer': names[opt],
                     'parameters': {'1': {'step': step}, '2': {'step': step}}}).encode()
    files = {'optimizer.json': oj,
             'loss.npy': npy('<f4', [step], f32(*[1.0 / (i + 1) for i in range(step)])),
             'weight_1.npy': npy('<f4', [3, 2], f32(1, 2, 3, 4, 5, 6)),
             'weight_2.npy': npy('<f4', [2], f32(0.5, -0.5))}
    m1 = npy('<f8', [3, 2], f64(*[0.1] * 6))
    m2 = npy('<f8', [2], f64(0.2, 0.3))
    state = []
    if opt == 1:
        state = [('momentum_1.npy', m1), ('momentum_2.npy', m2)]
    elif opt == 2:
        state = [('adam_m_1.npy', m1), ('adam_m_2.npy', m2),
                 ('adam_v_1.npy', m1), ('adam_v_2.npy', m2)]
    files.update(state)
    ck = json.dumps({'format': 'pipeopt-checkpoint', 'format_version': 1,
                     'step': step, 'num_microbatches': 4,
                     'optimizer': names[opt], 'parameters': [1, 2],
                     'checksum': 'fnv1a64',
                     'files': {n: {'bytes': len(d), 'fnv1a64': fnv1a64(d)}
                               for n, d in sorted(files.items())}}).encode()
    parts = [b'step-%d\n' % step, ck, oj, files['loss.npy'],
             files['weight_1.npy'], files['weight_2.npy']]
    if opt == 1:
        parts += [m1, m2]
    elif opt == 2:
        parts += [b'', b'', m1, m2, m1, m2]
    return bytes([opt]) + SEP.join(parts)
put('checkpoint', 'sgd-step2', checkpoint(0, 2))
put('checkpoint', 'momentum-step3', checkpoint(1, 3))
put('checkpoint', 'adamw-step2', checkpoint(2, 2))
put('checkpoint', 'adamw-step0', checkpoint(2, 0))

# machine-json: the documented hardware file, the tests' system files
with open(os.path.join(root, 'docs/CostModel.md')) as f:
    doc = f.read()
start = doc.index('```json\n{\n  "base": "h100"') + len('```json\n')
put('machine-json', 'hardware-doc.json', doc[start:doc.index('```', start)])
copy('machine-json', ['test/Transforms/Inputs/simulate-dp-system.json',
                      'test/Transforms/Inputs/simulate-tied-system.json'])
put('machine-json', 'preset-dp2.json',
    '{"preset": "compute-medium/net-slow", "name": "dp2", "data_parallel": 2}')
put('machine-json', 'systems-list.json',
    '{"systems": [{"base": "h100", "name": "a"}, {"base": "cpu", "name": "b", '
    '"topology": {"ranks_per_node": 2, "inter_node": {"latency_s": 1e-5, '
    '"bandwidth": "10GB"}}}]}')

# profile-json
copy('profile-json', ['test/Transforms/Inputs/simulate-profile-1f1b4.json',
                      'test/Transforms/Inputs/simulate-profile-fwd4.json'])
put('profile-json', 'doc.json',
    '{"stages": [{"stage": 0, "forward_s": 0.0011, "backward_s": 0.0023, '
    '"backward_input_s": null, "backward_weight_s": null}], '
    '"ops": [{"index": 12, "forward_s": 3.1e-5, "backward_input_s": 2.9e-5, '
    '"backward_full_s": 5e-5}]}')

# torch-csv: the small tables of the tests
copy('torch-csv', [
    'test/Transforms/Inputs/schedule-comm-2stages.csv',
    'test/Transforms/Inputs/schedule-zb-2stages.csv',
    'test/Transforms/Inputs/schedule-deadlock-2stages.csv',
    'test/Transforms/Inputs/schedule-malformed.csv',
    'test/Schedule/Inputs/torch/ScheduleInterleavedZeroBubble-S2-M2.comms.csv'])

# ir: the examples and small test models; "// training" selects training=true
copy('ir', ['examples/mlp4.tosa.mlir', 'test/Runtime/Inputs/linear.mlir',
            'test/Runtime/Inputs/mlp2.mlir',
            'test/Transforms/Inputs/classify-batch4.mlir'])
with open(os.path.join(root, 'test/Runtime/Inputs/linear.mlir')) as f:
    put('ir', 'linear-training.mlir', '// training\n' + f.read())
with open(os.path.join(root, 'examples/mlp4.tosa.mlir')) as f:
    put('ir', 'mlp4-training.mlir', '// training\n' + f.read())
