#!/usr/bin/env python3
"""A model trained in C is served from Java with the same predictions
(issue 14): `weft train fashion-mnist` saves its bundle and prints a hash of
its predicted classes over the test set; the Java example ServeFashionMnist
loads the bundle, predicts every test image through the serving_default
signature and prints the same line, which must match digit for digit.

Usage: test_model_languages.py WEFT_TOOL JAVA WEFT_JAR EXAMPLE_JAR JNI_LIB
"""

import os
import re
import subprocess
import sys
import tempfile

from tap import Skip, Tap

WEFT, JAVA, WEFT_JAR, EXAMPLE_JAR, JNI = sys.argv[1:6]
DATA = '/usr/share/datasets/fashion-mnist'
tap = Tap()


def line(pattern, text, who):
    found = re.search(pattern, text, re.M)
    assert found, f'{who} printed no line matching {pattern!r}:\n{text}'
    return found.group(0)


@tap.case
def java_serves_the_c_trainers_bundle_with_the_same_predictions():
    if not os.path.isfile(os.path.join(DATA, 't10k-images-idx3-ubyte.gz')):
        raise Skip(f'no Fashion-MNIST in {DATA} (dataset-fashion-mnist)')
    if not JAVA:
        raise Skip('the Java binding is not built')
    with tempfile.TemporaryDirectory() as tmp:
        bundle = os.path.join(tmp, 'mlp-model')
        trained = subprocess.run(
            [WEFT, 'train', 'fashion-mnist', '--model', 'mlp', '--epochs', '1',
             '--device', 'CPU', '--checkpoint', os.path.join(tmp, 'ckpt'),
             '--save', bundle],
            capture_output=True, text=True, timeout=600, cwd=tmp)
        assert trained.returncode == 0, trained.stderr
        c_line = line(r'^test predictions: .*$', trained.stdout, 'weft train')
        c_accuracy = line(r'^test accuracy: [0-9.]+%', trained.stdout,
                          'weft train')
        assert os.path.isfile(os.path.join(bundle, 'graph.weft'))
        assert os.path.isfile(os.path.join(bundle, 'variables.ckpt'))
        served = subprocess.run(
            [JAVA, '-Dweft.jni.library=' + JNI, '-cp',
             WEFT_JAR + ':' + EXAMPLE_JAR, 'ServeFashionMnist', bundle],
            capture_output=True, text=True, timeout=600)
        assert served.returncode == 0, served.stderr
        java_line = line(r'^test predictions: .*$', served.stdout,
                         'ServeFashionMnist')
        java_accuracy = line(r'^test accuracy: [0-9.]+%', served.stdout,
                             'ServeFashionMnist')
        print(f'# C:    {c_line}\n# Java: {java_line}', flush=True)
        assert c_line == java_line, (c_line, java_line)
        assert c_accuracy == java_accuracy, (c_accuracy, java_accuracy)
        # Predictions of a trained model, not of a constant one (whose
        # hashes would agree trivially).
        assert float(c_accuracy.split()[2].rstrip('%')) > 75, c_accuracy


sys.exit(tap.finish())
