"""The model zoo: real models, random weights, cloned natively and through compat_clone.

Each `Case` builds one real model with the Keras module `K` of the family
under test (tiny configs, small inputs, `weights=None`: nothing is
downloaded) and the inputs to run it on. `run_side` clones it twice with one
`clone(model, **kwargs)` (the native `clone_model` behind compat_clone's
signature, see `features.native_clone`, or `compat_clone.clone_model`), once
without weights and once with `copy_weights=True`, and judges four aspects:

* ``class``: both clones are of the source's own class (`type(c) is type(m)`),
  and so is every layer inside them, at every depth;
* ``outputs``: the weighted clone gives the source's outputs (values and
  dtypes), the unweighted one outputs of the same shapes and dtypes;
* ``trainable``: both clones have the source's trainable set: the model's
  flag, every layer's `trainable`, sub-layers (wrapped, nested, inside
  attention blocks) included, in order, and the trainable and non-trainable
  variables (name and shape, in order);
* ``source``: the source is untouched (weights bit for bit, variables,
  names, trainable flags at every level), and the clones are independent of
  it (no shared variable; writing to the clone leaves the source alone).

`tests/test_zoo.py` runs every case both ways, records each case x aspect
as feature ``zoo_<case>.<aspect>`` for COMPATIBILITY.md, and judges them.
Builders are plain functions; one raising `NotApplicable` means the model
does not exist in that family (or backend).
"""

from __future__ import annotations

import contextlib
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

import numpy as np
from packaging.version import Version

from features import NotApplicable, backend_name, family_name
from features import predict as _predict
from model_state import snapshot

ASPECTS = ("class", "outputs", "trainable", "source")
Outcome = Tuple[str, str]  # ("pass" | "fail" | "n/a", detail)


@dataclass(frozen=True)
class Case:
    """One zoo model.

    `build(K)` returns ``(model, inputs)``. `native_fails` maps an aspect to
    ``(reason, applies(K))``: where `applies` holds, the native clone is known
    to fail that aspect, and the test asserts it does. `refused` names a
    layer the native clone cannot rebuild from its config: there the native
    clone must fail, and compat_clone must refuse (`UnsupportedModelError`, or
    the native exception type with a note) naming that layer and the
    `clone_function` escape, or clone it right.
    `context(K)` wraps the build and both clones (mixed precision); `rtol` /
    `atol` compare outputs. `too_slow_on` maps a Keras 3 backend (or ``"tf1"``:
    standalone Keras 2 on TensorFlow 1.x) to why the
    case does not run there (time budget: the model exists there, so nothing
    is recorded for it).
    """

    name: str
    description: str
    build: Callable[[Any], Tuple[Any, Any]]
    native_fails: Dict[str, Tuple[str, Callable[[Any], bool]]] = field(default_factory=dict)
    refused: Optional[str] = None
    context: Optional[Callable[[Any], Any]] = None
    rtol: float = 1e-5
    atol: float = 1e-5
    too_slow_on: Dict[str, str] = field(default_factory=dict)


CASES: Dict[str, Case] = {}


def case(description: str, **options: Any) -> Callable[[Callable[[Any], Tuple[Any, Any]]], Callable[[Any], Tuple[Any, Any]]]:
    def register(build: Callable[[Any], Tuple[Any, Any]]) -> Callable[[Any], Tuple[Any, Any]]:
        CASES[build.__name__] = Case(build.__name__, description, build, **options)
        return build

    return register


# -- family facts ---------------------------------------------------------------


def _version(K: Any) -> Version:
    return Version(K.__version__)


def keras3(K: Any) -> bool:
    return family_name(K) == "keras3"


def keras2(K: Any) -> bool:
    return family_name(K) == "keras2"


def tf_keras(K: Any) -> bool:
    return family_name(K) == "tf_keras"


def keras2_before(version: str) -> Callable[[Any], bool]:
    return lambda K: keras2(K) and _version(K) < Version(version)


def every_aspect(reason: str, applies: Callable[[Any], bool]) -> Dict[str, Tuple[str, Callable[[Any], bool]]]:
    """`native_fails` for a native clone that fails outright (every aspect)."""
    return {aspect: (reason, applies) for aspect in ASPECTS}


def keras3_before(version: str) -> Callable[[Any], bool]:
    return lambda K: keras3(K) and _version(K) < Version(version)


def native_bug(issue_id: str) -> Callable[[Any], bool]:
    """Where the known-issues table says the row `issue_id` affects this release."""
    from compat_clone import known_issues

    rows = known_issues.issue(issue_id)
    return lambda K: any(row.family == family_name(K) and known_issues.affects(row, K.__version__) for row in rows)


# The native clone of Keras 2 (tf.keras, tf_keras, standalone) and of Keras 3.0
# (3.2 keeps it; 3.1 not run) rebuilds a frozen nested model trainable (the
# `trainable_false` feature); tf.keras and tf_keras also one in TimeDistributed.
_NESTED_UNFROZEN = {"trainable": ("the native clone unfreezes a frozen nested model",
                                  lambda K: not keras3(K) or keras3_before("3.2")(K))}
# (trainable: _NESTED_UNFROZEN's, which holds in standalone Keras 2 already)
_APP_UNREGISTERED = every_aspect("keras2-app-unregistered: 2.0-2.1 MobileNet's relu6 is not registered: the clone raises",
                                 native_bug("keras2-app-unregistered"))
_TD_OUTPUT_LIST = ("keras3-functional-output-list: the rebuilt nested model returns a list; the clone raises",
                   native_bug("keras3-functional-output-list"))
_TD_NESTED_UNFROZEN = {
    "trainable": ("tf.keras / tf_keras clone a frozen TimeDistributed(model) trainable; "
                  "keras3-functional-output-list: the clone raises",
                  lambda K: tf_keras(K) or native_bug("keras3-functional-output-list")(K)),
    "class": _TD_OUTPUT_LIST,
    "outputs": _TD_OUTPUT_LIST,
    "source": _TD_OUTPUT_LIST,
}


def _require_layer(K: Any, name: str) -> Any:
    layer = getattr(K.layers, name, None)
    if layer is None:
        raise NotApplicable(f"no layers.{name} in {K.__name__} {K.__version__}")
    return layer


def _applications(K: Any) -> Any:
    """`K.applications`; tf.keras 2.12-2.15's `keras` package loads it only when imported."""
    import importlib

    return importlib.import_module(K.__name__ + ".applications")


def _keras_hub(K: Any) -> Any:
    """keras_hub (keras-hub 0.32 needs Keras 3.15+; the 3.15 envs install it, so an ImportError there fails)."""
    if not keras3(K):
        raise NotApplicable("keras_hub models are Keras 3 models")
    if _version(K) < Version("3.15"):
        raise NotApplicable(f"keras-hub 0.32 requires keras>=3.15 (this is {K.__version__})")
    import keras_hub

    return keras_hub


def _call_frozen(K: Any, block: Any, x: Any) -> Any:
    """Calls a frozen sub-model in inference mode, as fine-tuning guides do (Keras 2.0-2.3: no `training=`)."""
    return block(x) if keras2(K) else block(x, training=False)


def ints(shape: Tuple[int, ...], high: int, seed: int = 0, pad: int = 0) -> np.ndarray:
    """Token ids in [1, high), the last `pad` steps of every other row 0 (padding)."""
    ids = np.random.RandomState(seed).randint(1, high, size=shape).astype("int32")
    if pad:
        ids[::2, -pad:] = 0
    return ids


def floats(shape: Tuple[int, ...], seed: int = 0) -> np.ndarray:
    return np.random.RandomState(seed).standard_normal(shape).astype("float32")


# -- keras.applications ----------------------------------------------------------

# JAX on CPU compiles every (op, shape) once per process, and each initializer:
# one MobileNet costs 40-80 s there, more than the whole zoo's budget.
_JAX_COMPILES = {"jax": "a MobileNet costs 40-80 s of XLA compiles on JAX CPU; it runs on TensorFlow and torch"}
# Standalone Keras 2 on TensorFlow 1.15 builds each BatchNormalization's moving-average updates and every
# variable as graph ops, twice per case (native and ours): 80-270 s per MobileNet case on a busy 2-core machine.
# The default run clones both in keras-2.3.1 (its TF1 graph code path on TF 2.15); the -tf1 environments of
# make test-wide run them too.
_SLOW_APPS = {**_JAX_COMPILES, "tf1": "a MobileNet costs 80-270 s of TF1 graph building per case on TensorFlow 1.15; "
                                      "standalone Keras 2 clones it in keras-2.3.1"}


@case("keras.applications MobileNetV2 (alpha 0.35, 32x32, weights=None)", too_slow_on=_SLOW_APPS)
def app_mobilenet_v2(K: Any) -> Tuple[Any, Any]:
    if not hasattr(_applications(K), "MobileNetV2"):  # standalone Keras 2.2.0 brought it
        import pytest

        pytest.skip(f"{K.__name__} {K.__version__} has no keras.applications.MobileNetV2")
    model = _applications(K).MobileNetV2(input_shape=(32, 32, 3), alpha=0.35, weights=None, classes=4)
    return model, floats((2, 32, 32, 3))


@case("keras.applications MobileNet (alpha 0.25, include_top=False) frozen under a trainable head: "
      "transfer learning", native_fails={**_APP_UNREGISTERED, **_NESTED_UNFROZEN}, too_slow_on=_SLOW_APPS)
def frozen_app_backbone(K: Any) -> Tuple[Any, Any]:
    base = _applications(K).MobileNet(input_shape=(32, 32, 3), alpha=0.25, include_top=False, weights=None,
                                      pooling="avg")
    base.trainable = False
    x = K.Input((32, 32, 3))
    h = K.layers.Dropout(0.2)(_call_frozen(K, base, x))
    model = K.models.Model(x, K.layers.Dense(3, name="head")(h), name="transfer")
    return model, floats((2, 32, 32, 3))


# Keras 3's Normalization caches its mean and variance when built: the native
# clone is built before `set_weights`, so it keeps normalizing with 0 and 1
# (on torch the cache is a view of the variables, and follows them).
@case("preprocessing inside the model: Rescaling, then a Normalization adapted to data",
      native_fails={"outputs": ("Keras 3 Normalization keeps the statistics it cached before set_weights",
                                lambda K: keras3(K) and backend_name(K) != "torch")})
def adapted_normalization(K: Any) -> Tuple[Any, Any]:
    norm_cls = _require_layer(K, "Normalization")
    norm = norm_cls(name="normalize")
    norm.adapt(floats((16, 5), seed=3) * 4.0 + 2.0)
    x = K.Input((5,), name="raw")
    h = norm(_require_layer(K, "Rescaling")(0.5, name="rescale")(x))
    return K.models.Model(x, K.layers.Dense(2, name="head")(h), name="preprocessing"), floats((3, 5))


# -- attention, recurrent and masked text models -------------------------------------


@case("transformer encoder block: self-attention MultiHeadAttention, residuals, LayerNormalization, FFN")
def transformer_block(K: Any) -> Tuple[Any, Any]:
    mha = _require_layer(K, "MultiHeadAttention")
    x = K.Input((6, 8), name="sequence")
    h = mha(num_heads=2, key_dim=4, name="self_attention")(x, x)
    h = K.layers.LayerNormalization(name="ln1")(K.layers.Add()([x, h]))
    f = K.layers.Dense(16, activation="relu", name="ffn1")(h)
    f = K.layers.Dense(8, name="ffn2")(K.layers.Dropout(0.1)(f))
    h = K.layers.LayerNormalization(name="ln2")(K.layers.Add()([h, f]))
    out = K.layers.Dense(3, name="classify")(K.layers.GlobalAveragePooling1D()(h))
    return K.models.Model(x, out, name="transformer_block"), floats((2, 6, 8))


@case("seq2seq: LSTM encoder states into the decoder's initial_state=, masked embeddings",
      # keras 2.1-2.2.4 (known issue keras2-rnn-state-twice): the native clone
      # fails on the decoder's `initial_state=` (see test_native_guarantees).
      native_fails=every_aspect("keras2-rnn-state-twice: clone_model fails on `initial_state=`",
                                native_bug("keras2-rnn-state-twice")))
def seq2seq_lstm_states(K: Any) -> Tuple[Any, Any]:
    enc_in = K.Input((5,), dtype="int32", name="source_tokens")
    dec_in = K.Input((4,), dtype="int32", name="target_tokens")
    enc = K.layers.Embedding(12, 6, mask_zero=True, name="source_embedding")(enc_in)
    _, state_h, state_c = K.layers.LSTM(8, return_state=True, name="encoder")(enc)
    dec = K.layers.Embedding(12, 6, mask_zero=True, name="target_embedding")(dec_in)
    seq = K.layers.LSTM(8, return_sequences=True, name="decoder")(dec, initial_state=[state_h, state_c])
    out = K.layers.TimeDistributed(K.layers.Dense(12, activation="softmax"), name="vocab")(seq)
    model = K.models.Model([enc_in, dec_in], out, name="seq2seq")
    return model, [ints((2, 5), 12, pad=2), ints((2, 4), 12, seed=1, pad=1)]


def bidirectional_from_config_grows(K: Any) -> bool:
    """Whether `Bidirectional.from_config` builds more variables than its source (Keras 3.0: a third LSTM)."""
    source = K.layers.Bidirectional(K.layers.LSTM(2))
    source.build((None, 3, 2))
    rebuilt = K.layers.Bidirectional.from_config(source.get_config())
    rebuilt.build((None, 3, 2))
    return len(rebuilt.weights) > len(source.weights)


@case("text tagger: Embedding(mask_zero) -> Bidirectional(LSTM) -> TimeDistributed(Dense), padded ids")
def bidirectional_masked_text(K: Any) -> Tuple[Any, Any]:
    if keras3(K) and bidirectional_from_config_grows(K):
        # Keras 3.0-3.2: the rebuilt Bidirectional holds a third LSTM, natively and
        # through compat_clone alike (a limitation shared with native, not fixed;
        # tests/test_native_guarantees.py asserts both sides).
        raise NotApplicable(f"Bidirectional.from_config grows in {K.__name__} {K.__version__}")
    ids = K.Input((7,), dtype="int32", name="tokens")
    h = K.layers.Embedding(20, 6, mask_zero=True)(ids)
    # Keras 2 unrolled (7 steps): tf.keras / tf_keras trace two tf.function
    # variants per LSTM call (3-4 s a clone), the seq2seq case keeps them. Keras
    # 3 keeps its default: unroll=True with a mask fails on torch (Keras 3.15).
    lstm = K.layers.LSTM(5, return_sequences=True, unroll=not keras3(K))
    h = K.layers.Bidirectional(lstm, name="bilstm")(h)
    out = K.layers.TimeDistributed(K.layers.Dense(3), name="tags")(h)
    return K.models.Model(ids, out, name="tagger"), ints((4, 7), 20, pad=3)


# -- mixed precision and frozen sub-blocks -------------------------------------------------


@contextlib.contextmanager
def mixed_float16(K: Any) -> Iterator[None]:
    """The global policy `mixed_float16` for the build and both clones; the previous policy restored after."""
    mp = getattr(K, "mixed_precision", None)
    if mp is None or not hasattr(mp, "set_global_policy"):
        raise NotApplicable(f"no mixed_precision.set_global_policy in {K.__name__} {K.__version__}")
    previous = mp.global_policy()
    mp.set_global_policy("mixed_float16")
    try:
        yield
    finally:
        mp.set_global_policy(previous)


@case("mixed precision (global policy mixed_float16): float16 hidden output, float32 head",
      context=mixed_float16, rtol=1e-3, atol=1e-3)
def mixed_precision(K: Any) -> Tuple[Any, Any]:
    x = K.Input((8,), name="features")
    h = K.layers.Dense(16, activation="relu", name="hidden")(x)
    h = K.layers.LayerNormalization(name="norm")(h)
    code = K.layers.Dense(4, name="code")(h)  # float16 under the policy
    head = K.layers.Activation("linear", dtype="float32", name="head")(K.layers.Dense(2, name="logits")(h))
    return K.models.Model(x, [code, head], name="mixed"), floats((3, 8))


# The native clone rebuilds MultiHeadAttention frozen, but the sub-layers it
# creates when built (query/key/value/output EinsumDense) trainable.
@case("frozen MultiHeadAttention called with attention_mask= (a tensor keyword argument)",
      native_fails={"trainable": ("MultiHeadAttention's sub-layers come back trainable",
                                  lambda K: not keras2(K))})
def frozen_mha(K: Any) -> Tuple[Any, Any]:
    mha = _require_layer(K, "MultiHeadAttention")(num_heads=2, key_dim=4, name="frozen_attention")
    x = K.Input((6, 8), name="sequence")
    mask = K.Input((6, 6), dtype="bool", name="attention_mask")
    h = mha(x, x, attention_mask=mask)
    mha.trainable = False
    h = K.layers.Add()([x, h])
    out = K.layers.Dense(3, name="classify")(K.layers.GlobalAveragePooling1D()(h))
    model = K.models.Model([x, mask], out, name="frozen_mha")
    keep = np.tril(np.ones((6, 6), dtype=bool))
    return model, [floats((2, 6, 8)), np.stack([keep, np.ones((6, 6), dtype=bool)])]


@case("nested models: one frozen whole, one with a frozen layer inside", native_fails=_NESTED_UNFROZEN)
def frozen_nested_models(K: Any) -> Tuple[Any, Any]:
    a = K.Input((6,))
    frozen = K.models.Model(a, K.layers.Dense(6, name="f2")(K.layers.Dense(6, activation="relu", name="f1")(a)),
                            name="frozen_block")
    frozen.trainable = False
    b = K.Input((6,))
    inner_frozen = K.layers.Dense(6, name="p1")
    partial = K.models.Model(b, K.layers.Dense(6, name="p2")(inner_frozen(b)), name="partly_frozen_block")
    inner_frozen.trainable = False
    x = K.Input((6,), name="features")
    h = K.layers.Concatenate()([_call_frozen(K, frozen, x), partial(x)])
    return K.models.Model(x, K.layers.Dense(2, name="head")(h), name="frozen_nested"), floats((3, 6))


@case("frozen TimeDistributed(<nested model>): a per-frame encoder, frozen as a whole",
      native_fails=_TD_NESTED_UNFROZEN)
def frozen_timedistributed_model(K: Any) -> Tuple[Any, Any]:
    f = K.Input((4,))
    frame = K.models.Model(f, K.layers.Dense(5, name="e2")(K.layers.Dense(5, activation="relu", name="e1")(f)),
                           name="frame_encoder")
    td = K.layers.TimeDistributed(frame, name="per_frame")
    x = K.Input((3, 4), name="frames")
    try:
        h = td(x)
    except NotImplementedError as exc:  # Keras 3.0: a Functional has no compute_output_shape
        raise NotApplicable(f"TimeDistributed cannot wrap a model in {K.__name__} {K.__version__}") from exc
    td.trainable = False
    out = K.layers.Dense(2, name="head")(K.layers.Flatten()(h))
    return K.models.Model(x, out, name="frozen_td"), floats((2, 3, 4))


# -- keras_hub (Keras 3.15+): tiny backbones and one task per modality -----------------

_HUB_CLASS = ("the native clone rebuilds a keras_hub model as a plain Functional", keras3)
# On JAX the zoo keeps BERT, GPT-2 and the ResNet classifier (backbones and a
# task per modality); each further backbone is 10-25 s of XLA compiles there.
_JAX_HUB = {"jax": "each further keras_hub backbone costs 10-25 s of XLA compiles on JAX CPU; "
                   "it runs on TensorFlow and torch"}
_TEXT_LEN = 8


def _text_inputs(segments: bool = False) -> Dict[str, np.ndarray]:
    ids = ints((2, _TEXT_LEN), 50, pad=3)
    inputs = {"token_ids": ids, "padding_mask": (ids != 0).astype("int32")}
    if segments:
        inputs["segment_ids"] = np.zeros_like(ids)
    return inputs


def _bert(hub: Any) -> Any:
    return hub.models.BertBackbone(vocabulary_size=50, num_layers=2, num_heads=2, hidden_dim=16,
                                   intermediate_dim=32, max_sequence_length=16)


def _resnet(hub: Any) -> Any:
    # ResNetBackbone requires 64 filters in its first stack (and its stem).
    return hub.models.ResNetBackbone(input_conv_filters=[64], input_conv_kernel_sizes=[3],
                                     stackwise_num_filters=[64, 16], stackwise_num_blocks=[1, 1],
                                     stackwise_num_strides=[1, 2], block_type="basic_block",
                                     use_pre_activation=False, image_shape=(32, 32, 3))


@case("keras_hub BertBackbone (2 layers, hidden 16)", native_fails={"class": _HUB_CLASS})
def hub_bert_backbone(K: Any) -> Tuple[Any, Any]:
    return _bert(_keras_hub(K)), _text_inputs(segments=True)


@case("keras_hub GPT2Backbone (2 layers, hidden 16)", native_fails={"class": _HUB_CLASS})
def hub_gpt2_backbone(K: Any) -> Tuple[Any, Any]:
    hub = _keras_hub(K)
    model = hub.models.GPT2Backbone(vocabulary_size=50, num_layers=2, num_heads=2, hidden_dim=16,
                                    intermediate_dim=32, max_sequence_length=16)
    return model, _text_inputs()


@case("keras_hub GemmaBackbone (2 layers, grouped-query attention)", native_fails={"class": _HUB_CLASS},
      too_slow_on=_JAX_HUB)
def hub_gemma_backbone(K: Any) -> Tuple[Any, Any]:
    hub = _keras_hub(K)
    model = hub.models.GemmaBackbone(vocabulary_size=50, num_layers=2, num_query_heads=2, num_key_value_heads=1,
                                     hidden_dim=16, intermediate_dim=32, head_dim=8)
    return model, _text_inputs()


# LlamaTransformerDecoder.get_config() lacks `rope_scaling_factor` (keras-hub 0.32).
@case("keras_hub Llama3Backbone (2 layers): its decoder layer cannot be rebuilt from its config",
      refused="transformer_layer_0", too_slow_on=_JAX_HUB)
def hub_llama3_backbone(K: Any) -> Tuple[Any, Any]:
    hub = _keras_hub(K)
    model = hub.models.Llama3Backbone(vocabulary_size=50, num_layers=2, num_query_heads=2, num_key_value_heads=1,
                                      hidden_dim=16, intermediate_dim=32)
    return model, _text_inputs()


# ViTPatchingAndEmbedding.get_config() returns `num_patches` / `num_positions`,
# which its constructor refuses (keras-hub 0.32).
@case("keras_hub ViTBackbone (32x32, patch 8): its patch embedding cannot be rebuilt from its config",
      refused="vit_patching_and_embedding", too_slow_on=_JAX_HUB)
def hub_vit_backbone(K: Any) -> Tuple[Any, Any]:
    hub = _keras_hub(K)
    model = hub.models.ViTBackbone(image_shape=(32, 32, 3), patch_size=8, num_layers=2, num_heads=2,
                                   hidden_dim=16, mlp_dim=32)
    return model, floats((2, 32, 32, 3))


@case("keras_hub ResNetBackbone (two basic-block stacks, 32x32)", native_fails={"class": _HUB_CLASS},
      too_slow_on=_JAX_HUB)
def hub_resnet_backbone(K: Any) -> Tuple[Any, Any]:
    return _resnet(_keras_hub(K)), floats((2, 32, 32, 3))


@case("keras_hub BertTextClassifier (text task, preprocessor=None) on a tiny BertBackbone",
      native_fails={"class": _HUB_CLASS})
def hub_bert_text_classifier(K: Any) -> Tuple[Any, Any]:
    hub = _keras_hub(K)
    model = hub.models.BertTextClassifier(_bert(hub), num_classes=2, preprocessor=None)
    return model, _text_inputs(segments=True)


# The causal LM's head reuses the backbone's token embedding: the native clone
# makes a second one (37 variables for the source's 36), and `set_weights` fails.
@case("keras_hub GPT2CausalLM (text task, preprocessor=None): token embedding tied between backbone and head",
      native_fails=every_aspect("the native clone unties the token embedding (37 variables, not 36)", keras3))
def hub_gpt2_causal_lm(K: Any) -> Tuple[Any, Any]:
    hub = _keras_hub(K)
    backbone = hub.models.GPT2Backbone(vocabulary_size=50, num_layers=2, num_heads=2, hidden_dim=16,
                                       intermediate_dim=32, max_sequence_length=16)
    return hub.models.GPT2CausalLM(backbone=backbone, preprocessor=None), _text_inputs()


@case("keras_hub ResNetImageClassifier (image task, preprocessor=None) on a tiny ResNetBackbone",
      native_fails={"class": _HUB_CLASS})
def hub_resnet_image_classifier(K: Any) -> Tuple[Any, Any]:
    hub = _keras_hub(K)
    model = hub.models.ResNetImageClassifier(backbone=_resnet(hub), num_classes=3, preprocessor=None)
    return model, floats((2, 32, 32, 3))


# -- the judge -----------------------------------------------------------------------


def _children(layer: Any) -> List[Any]:
    """The layers directly inside `layer`: a model's `layers`, else its tracked sub-layers."""
    if hasattr(layer, "layers") and isinstance(getattr(layer, "layers", None), list) and hasattr(layer, "inputs"):
        return list(layer.layers)
    flatten = getattr(layer, "_flatten_layers", None)
    if flatten is not None:
        try:
            return list(flatten(include_self=False, recursive=False))
        except TypeError:
            pass
    # standalone Keras 2.0-2.3 tracks no sub-layers: the wrappers' and RNNs' own attributes
    found = []
    for attr in ("layer", "forward_layer", "backward_layer", "cell"):
        sub = getattr(layer, attr, None)
        if sub is not None and hasattr(sub, "trainable"):
            found.append(sub)
    return found


def layer_tree(model: Any) -> List[Tuple[str, str, bool]]:
    """(position path, class, trainable) of every layer at every depth, in order.

    The path is made of positions ("2/0/3"), not names: a clone may number
    the auto-named sub-layers it creates differently. Input layers are left
    out: they hold no variable, and Keras 3 freezes them with their model.
    """
    rows: List[Tuple[str, str, bool]] = []
    seen: set = set()

    def visit(layer: Any, path: str) -> None:
        for i, child in enumerate(_children(layer)):
            if id(child) in seen:  # a shared layer: listed once, where first met
                continue
            seen.add(id(child))
            if type(child).__name__ == "InputLayer":  # no weights: its flag means nothing
                continue
            where = f"{path}/{i}" if path else str(i)
            rows.append((where, type(child).__name__, bool(child.trainable)))
            visit(child, where)

    visit(model, "")
    return rows


def _short_name(variable: Any) -> str:
    """A variable's own name (`kernel`), without its layer scope or `:0`."""
    name = str(getattr(variable, "name", ""))
    return name.split("/")[-1].split(":")[0]


def trainable_signature(model: Any) -> Dict[str, Any]:
    """The model's flag, each layer's flag (by position, at every depth), its variables in order."""
    return {
        "model": bool(model.trainable),
        "layers": [(path, flag) for path, _, flag in layer_tree(model)],
        "trainable_weights": [(_short_name(v), tuple(int(d) for d in v.shape)) for v in model.trainable_weights],
        "non_trainable_weights": [(_short_name(v), tuple(int(d) for d in v.shape))
                                  for v in model.non_trainable_weights],
    }


def _diff(expected: Dict[str, Any], got: Dict[str, Any], rows: Dict[str, Any]) -> str:
    """The first difference, said with the layer classes (`rows`: path -> (class, flag) in the clone)."""
    for key in expected:
        if expected[key] != got[key]:
            if isinstance(expected[key], list):
                if len(expected[key]) != len(got[key]):
                    return f"{key}: {len(got[key])} vs the source's {len(expected[key])}"
                for a, b in zip(expected[key], got[key]):
                    if a != b:
                        where = f" ({rows[b[0]][0]} at {b[0]})" if key == "layers" and b[0] in rows else ""
                        return f"{key}: {b!r}{where} where the source has {a!r}"
            return f"{key}: {got[key]!r} vs the source's {expected[key]!r}"
    return ""


def outputs(model: Any, x: Any) -> List[np.ndarray]:
    return _predict(model, x)


def _failure(exc: BaseException) -> str:
    return traceback.format_exception_only(type(exc), exc)[-1].strip()


@dataclass
class SideResult:
    """One side's verdict per aspect, and what its first clone call raised (if anything)."""

    aspects: Dict[str, Outcome]
    clone_error: Optional[BaseException] = None


def _check_class(model: Any, clones: List[Any]) -> None:
    inner = [(path, cls) for path, cls, _ in layer_tree(model)]
    for label, c in zip(("clone", "clone(copy_weights=True)"), clones):
        assert type(c) is type(model), (
            f"{label} is a {type(c).__module__}.{type(c).__name__}, the source a "
            f"{type(model).__module__}.{type(model).__name__}"
        )
        got = [(path, cls) for path, cls, _ in layer_tree(c)]
        assert len(got) == len(inner), f"{label} has {len(got)} layers at every depth, the source {len(inner)}"
        for a, b in zip(inner, got):
            assert a == b, f"{label}: a {b[1]} at {b[0]} where the source has a {a[1]}"


def _check_trainable(model: Any, clones: List[Any]) -> None:
    expected = trainable_signature(model)
    for label, c in zip(("clone", "clone(copy_weights=True)"), clones):
        rows = {path: (cls, flag) for path, cls, flag in layer_tree(c)}
        problem = _diff(expected, trainable_signature(c), rows)
        assert not problem, f"{label}: {problem}"


def _check_outputs(case: Case, model: Any, clones: List[Any], x: Any) -> None:
    expected = outputs(model, x)
    bare, weighted = (outputs(c, x) for c in clones)
    for label, got in (("clone", bare), ("clone(copy_weights=True)", weighted)):
        assert len(got) == len(expected), f"{label}: {len(got)} outputs, the source {len(expected)}"
        for i, (u, v) in enumerate(zip(expected, got)):
            assert v.shape == u.shape and v.dtype == u.dtype, (
                f"{label}, output {i}: {v.dtype}{list(v.shape)}, the source {u.dtype}{list(u.shape)}"
            )
    for i, (u, v) in enumerate(zip(expected, weighted)):
        np.testing.assert_allclose(v.astype("float64"), u.astype("float64"), rtol=case.rtol, atol=case.atol,
                                   err_msg=f"clone(copy_weights=True), output {i}")


def _check_source(model: Any, clones: List[Any], before: Dict[str, Any], tree: List[Any]) -> None:
    own = {id(v) for v in model.weights}
    for label, c in zip(("clone", "clone(copy_weights=True)"), clones):
        shared = [v.name for v in c.weights if id(v) in own]
        assert not shared, f"{label} shares {len(shared)} variables with the source ({shared[:3]})"
    weighted = clones[1]
    weighted.set_weights([np.asarray(w) + np.asarray(1, dtype=np.asarray(w).dtype) for w in weighted.get_weights()])
    after = snapshot(model)
    for key in ("name", "trainable", "variables", "trainable_variables", "layers"):
        assert after[key] == before[key], f"the source's {key} changed"
    assert len(after["weights"]) == len(before["weights"]), "the source's weights changed"
    for i, (old, new) in enumerate(zip(before["weights"], after["weights"])):
        assert old.tobytes() == new.tobytes(), f"source weight {i} changed"
    assert layer_tree(model) == tree, "the source's sub-layer trainable flags changed"


def run_side(case: Case, K: Any, clone: Callable[..., Any], source: Optional[Tuple[Any, Any]] = None, *,
             weights_by_set: bool = False) -> Tuple[SideResult, Tuple[Any, Any]]:
    """Clones the case's model with `clone` (without and with weights) and judges every aspect.

    `source` is a ``(model, inputs)`` pair to reuse (built by the other side
    and left untouched by it); None builds a fresh one. `weights_by_set`: the
    clone with weights is the clone without, given the source's weights by
    `set_weights` (what `features.native_clone` does for `copy_weights=True`:
    one clone less, and Keras 2 clones an application in seconds). Returns
    the verdicts and the ``(model, inputs)`` pair used. Must run inside
    `case.context`.
    """
    model, x = source if source is not None else case.build(K)
    before, tree = snapshot(model), layer_tree(model)
    try:
        clones = [clone(model)]
    except Exception as exc:  # judged per aspect, and by the refusal check
        detail = f"clone raised {_failure(exc)}"
        return SideResult({a: ("fail", detail) for a in ASPECTS}, exc), (model, x)
    try:
        if weights_by_set:
            clones[0].set_weights(model.get_weights())
            clones.append(clones[0])
        else:
            clones.append(clone(model, copy_weights=True))
    except Exception as exc:
        detail = f"clone(copy_weights=True) raised {_failure(exc)}"
        return SideResult({a: ("fail", detail) for a in ASPECTS}, exc), (model, x)
    checks: Dict[str, Callable[[], None]] = {
        "class": lambda: _check_class(model, clones),
        "trainable": lambda: _check_trainable(model, clones),
        "outputs": lambda: _check_outputs(case, model, clones, x),
        "source": lambda: _check_source(model, clones, before, tree),  # last: it writes to a clone
    }
    verdicts: Dict[str, Outcome] = {}
    for aspect in ("class", "trainable", "outputs", "source"):
        try:
            checks[aspect]()
        except Exception as exc:
            verdicts[aspect] = ("fail", _failure(exc))
        else:
            verdicts[aspect] = ("pass", "")
    return SideResult(verdicts), (model, x)


def side_context(case: Case, K: Any) -> Any:
    """The case's context (mixed precision) around the build and both sides' clones."""
    return case.context(K) if case.context is not None else contextlib.nullcontext()
