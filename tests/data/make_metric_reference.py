#!/usr/bin/env python3
"""Writes tests/data/metric_reference.json for tests/dsl/test_metric_reference.cpp: scores and
labels with scikit-learn's precision_recall_fscore_support, accuracy_score, roc_auc_score, the area under
precision_recall_curve, top-k accuracy and confusion_matrix, for binary outputs (as probabilities and as logits)
and one class of four against the rest (its softmax). Run with Debian's python3-sklearn: /usr/bin/python3 tests/data/make_metric_reference.py"""
import json
import os

import numpy as np
from sklearn.metrics import accuracy_score, auc, confusion_matrix, precision_recall_curve, precision_recall_fscore_support, roc_auc_score, top_k_accuracy_score

rng = np.random.default_rng(20261126)
N, C = 300, 4
labels = rng.integers(0, 2, N)
# Scores that lean towards the label, in (0, 1), at float32 precision.
scores = (1 / (1 + np.exp(-(rng.normal(0, 1.2, N) + 1.1 * (labels - 0.5) * 2)))).astype(np.float32)
class_scores = rng.normal(0, 1, (N, C)).astype(np.float32)
class_labels = rng.integers(0, C, N)
class_scores[np.arange(N), class_labels] += 0.8


def binary(threshold, truth, score):
    predicted = (score > threshold).astype(int)
    p, r, f, _ = precision_recall_fscore_support(truth, predicted, average="binary", zero_division=0)
    return {"precision": p, "recall": r, "f1_score": f}


class_id = 2
one_vs_rest = (class_labels == class_id).astype(int)
softmax = np.exp(class_scores) / np.exp(class_scores).sum(axis=1, keepdims=True)
pr_precision, pr_recall, _ = precision_recall_curve(labels, scores)
out = {
    "scores": scores.tolist(),
    "labels": labels.tolist(),
    "class_scores": class_scores.flatten().tolist(),
    "class_labels": class_labels.tolist(),
    "classes": C,
    "binary": binary(0.5, labels, scores),
    "binary_threshold_0.3": binary(0.3, labels, scores),
    "class_2_threshold_0": binary(0.0, one_vs_rest, class_scores[:, class_id]),
    "roc_auc": roc_auc_score(labels, scores),
    "pr_auc": auc(pr_recall, pr_precision),
    "class_2_softmax": softmax[:, class_id].astype(np.float32).tolist(),
    "class_2_roc_auc": roc_auc_score(one_vs_rest, softmax[:, class_id]),
    "top_1": top_k_accuracy_score(class_labels, class_scores, k=1),
    "top_2": top_k_accuracy_score(class_labels, class_scores, k=2),
    "confusion": confusion_matrix(class_labels, class_scores.argmax(axis=1), labels=range(C)).flatten().tolist(),
    "binary_confusion_threshold_0.3": confusion_matrix(labels, (scores > 0.3).astype(int)).flatten().tolist(),
    # The same decisions from logits (from_logits): the scores' log-odds, and the class scores'
    # softmax for class 2 at 0.3.
    "logits": np.log(scores / (1 - scores)).astype(np.float32).tolist(),
    "binary_accuracy": accuracy_score(labels, (scores > 0.5).astype(int)),
    "class_2_softmax_threshold_0.3": binary(0.3, one_vs_rest, softmax[:, class_id]),
}
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "metric_reference.json")
with open(path, "w") as f:
    json.dump(out, f)
print("wrote", path)
