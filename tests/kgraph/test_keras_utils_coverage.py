"""Keras 3.15's public names of ``keras.utils`` (with ``legacy`` and ``bounding_boxes``), ``keras.config``,
``keras.callbacks``, ``keras.dtype_policies``, ``keras.preprocessing`` (with ``image`` and ``sequence``) and
``keras.mixed_precision`` against kgraph's.

Every name exists in kgraph. The names listed in ``REFUSED`` exist but refuse to run, each with an error that
names the reason (as Keras's own dataset functions do without TensorFlow). The name lists are ``dir()`` of
Keras 3.15.1, pasted here so the check runs without Keras installed.
"""
import importlib

import numpy as np
import pytest

KERAS_NAMES = {
    "utils": (
        "Config", "CustomObjectScope", "FeatureSpace", "Progbar", "PyDataset", "Sequence", "array_to_img",
        "audio_dataset_from_directory", "bounding_boxes", "clear_session", "custom_object_scope",
        "deserialize_keras_object", "disable_interactive_logging", "enable_interactive_logging",
        "get_custom_objects", "get_file", "get_registered_name", "get_registered_object", "get_source_inputs",
        "image_dataset_from_directory", "img_to_array", "is_interactive_logging_enabled", "is_keras_tensor",
        "legacy", "load_img", "model_to_dot", "normalize", "pack_x_y_sample_weight", "pad_sequences", "plot_model",
        "register_keras_serializable", "save_img", "serialize_keras_object", "set_random_seed", "split_dataset",
        "standardize_dtype", "text_dataset_from_directory", "timeseries_dataset_from_array", "to_categorical",
        "unpack_x_y_sample_weight",
    ),
    "utils.legacy": ("deserialize_keras_object", "serialize_keras_object"),
    "utils.bounding_boxes": (
        "affine_transform", "clip_to_image_size", "compute_ciou", "compute_iou", "convert_format", "crop",
        "decode_deltas_to_boxes", "encode_box_to_deltas", "pad",
    ),
    "config": (
        "backend", "disable_flash_attention", "disable_interactive_logging", "disable_traceback_filtering",
        "dtype_policy", "enable_flash_attention", "enable_interactive_logging", "enable_traceback_filtering",
        "enable_unsafe_deserialization", "epsilon", "floatx", "image_data_format", "is_flash_attention_enabled",
        "is_interactive_logging_enabled", "is_nnx_enabled", "is_traceback_filtering_enabled", "max_epochs",
        "max_steps_per_epoch", "set_backend", "set_dtype_policy", "set_epsilon", "set_floatx",
        "set_image_data_format", "set_max_epochs", "set_max_steps_per_epoch",
    ),
    "callbacks": (
        "BackupAndRestore", "CSVLogger", "Callback", "CallbackList", "EarlyStopping", "History", "LambdaCallback",
        "LearningRateScheduler", "ModelCheckpoint", "OrbaxCheckpoint", "ProgbarLogger", "ReduceLROnPlateau",
        "RemoteMonitor", "SwapEMAWeights", "TensorBoard", "TerminateOnNaN",
    ),
    "dtype_policies": (
        "AWQDTypePolicy", "DTypePolicy", "DTypePolicyMap", "FloatDTypePolicy", "GPTQDTypePolicy", "Int4DTypePolicy",
        "QuantizedDTypePolicy", "QuantizedFloat8DTypePolicy", "deserialize", "get", "serialize",
    ),
    "preprocessing": (
        "image", "image_dataset_from_directory", "sequence", "text_dataset_from_directory",
        "timeseries_dataset_from_array",
    ),
    "preprocessing.image": ("array_to_img", "img_to_array", "load_img", "save_img", "smart_resize"),
    "preprocessing.sequence": ("pad_sequences",),
    "mixed_precision": (
        "DTypePolicy", "LossScaleOptimizer", "Policy", "dtype_policy", "global_policy", "set_dtype_policy",
        "set_global_policy",
    ),
}

_TF_DATA = "builds a tf.data pipeline: needs TensorFlow (Keras without TensorFlow raises ImportError too)"
_QUANTIZED = "a quantized policy: kgraph has no quantized kernels (its quantized policy names are refused too)"
# name -> (error type, reason, a call that uses the name)
REFUSED = {
    "utils.FeatureSpace": (ImportError, "preprocesses through tf.data: needs TensorFlow", lambda f: f()),
    "utils.audio_dataset_from_directory": (ImportError, _TF_DATA, lambda f: f(".")),
    "utils.image_dataset_from_directory": (ImportError, _TF_DATA, lambda f: f(".")),
    "utils.text_dataset_from_directory": (ImportError, _TF_DATA, lambda f: f(".")),
    "preprocessing.image_dataset_from_directory": (ImportError, _TF_DATA, lambda f: f(".")),
    "preprocessing.text_dataset_from_directory": (ImportError, _TF_DATA, lambda f: f(".")),
    "callbacks.OrbaxCheckpoint": (ImportError, "writes with Orbax, a JAX library", lambda f: f("/tmp/ckpt")),
    "dtype_policies.AWQDTypePolicy": (ValueError, _QUANTIZED, lambda f: f("awq")),
    "dtype_policies.GPTQDTypePolicy": (ValueError, _QUANTIZED, lambda f: f("gptq")),
    "dtype_policies.Int4DTypePolicy": (ValueError, _QUANTIZED, lambda f: f("int4")),
    "dtype_policies.QuantizedDTypePolicy": (ValueError, _QUANTIZED, lambda f: f("int8")),
    "dtype_policies.QuantizedFloat8DTypePolicy": (ValueError, _QUANTIZED, lambda f: f("float8")),
    "config.set_backend": (ValueError, "kgraph computes with NumPy only", lambda f: f("jax")),
}


def _module(namespace):
    return importlib.import_module(f"kgraph.{namespace}")


@pytest.mark.parametrize("namespace", sorted(KERAS_NAMES))
def test_every_keras_name_is_in_kgraph(namespace):
    missing = sorted(n for n in KERAS_NAMES[namespace] if not hasattr(_module(namespace), n))
    assert missing == [], f"keras.{namespace} names kgraph.{namespace} lacks: {missing}"
    public = sorted(n for n in dir(_module(namespace)) if not n.startswith("_") and n in KERAS_NAMES[namespace])
    assert public == sorted(KERAS_NAMES[namespace])


def test_the_namespaces_are_attributes_of_kgraph():
    import kgraph
    assert kgraph.mixed_precision is _module("mixed_precision") and kgraph.preprocessing is _module("preprocessing")
    assert kgraph.utils.legacy is _module("utils.legacy") and kgraph.utils.bounding_boxes is _module(
        "utils.bounding_boxes")
    assert {"mixed_precision", "preprocessing"} <= set(dir(kgraph))


@pytest.mark.parametrize("qualified", sorted(REFUSED))
def test_refused_names_raise_an_error_that_names_the_reason(qualified):
    namespace, name = qualified.rsplit(".", 1)
    assert name in KERAS_NAMES[namespace] and REFUSED[qualified][1].strip()
    error, _, use = REFUSED[qualified]
    with pytest.raises(error) as info:
        use(getattr(_module(namespace), name))
    text = str(info.value)
    assert any(word in text for word in ("TensorFlow", "Orbax", "moving average", "quantized", "NumPy")), text


def test_swap_ema_weights_is_a_working_callback():
    from kgraph import callbacks
    swap = callbacks.SwapEMAWeights(swap_on_epoch=True)
    assert isinstance(swap, callbacks.Callback) and swap.swap_on_epoch is True
    assert "callbacks.SwapEMAWeights" not in REFUSED


def test_aliases_are_the_same_objects():
    from kgraph import dtype_policies, mixed_precision, optimizers, preprocessing, utils
    assert utils.Sequence is utils.PyDataset and utils.CustomObjectScope is utils.custom_object_scope
    assert mixed_precision.Policy is mixed_precision.DTypePolicy is dtype_policies.DTypePolicy
    assert mixed_precision.global_policy is dtype_policies.dtype_policy
    assert mixed_precision.set_global_policy is dtype_policies.set_dtype_policy
    assert mixed_precision.LossScaleOptimizer is optimizers.LossScaleOptimizer
    assert preprocessing.sequence.pad_sequences is utils.pad_sequences
    assert preprocessing.image.load_img is utils.load_img and preprocessing.image.save_img is utils.save_img
    assert preprocessing.timeseries_dataset_from_array is utils.timeseries_dataset_from_array
    assert np.array_equal(preprocessing.sequence.pad_sequences([[1, 2], [3]]), [[1, 2], [0, 3]])


def test_coverage_counts():
    counts = {namespace: len(names) for namespace, names in KERAS_NAMES.items()}
    assert counts == {"utils": 40, "utils.legacy": 2, "utils.bounding_boxes": 9, "config": 25, "callbacks": 16,
                      "dtype_policies": 11, "preprocessing": 5, "preprocessing.image": 5,
                      "preprocessing.sequence": 1, "mixed_precision": 7}
    assert len(REFUSED) == 13
