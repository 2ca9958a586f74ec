"""Keras 3.15.1's public names, by module: data written by dev/keras3_api.py; do not edit.

`keras3_rules` rewrites an old Keras name only to one listed here. No libcst, no framework.
"""

from __future__ import annotations

from typing import Dict, FrozenSet

__all__ = ["KERAS3_VERSION", "KERAS3_NAMES"]

KERAS3_VERSION = "3.15.1"


def _names(text: str) -> FrozenSet[str]:
    return frozenset(text.split())


KERAS3_NAMES: Dict[str, FrozenSet[str]] = {
    "keras": _names(
        "DTypePolicy FloatDTypePolicy Function Initializer Input InputSpec KerasTensor Layer Loss Metric "
        "Model Operation Optimizer Quantizer Regularizer RematScope Sequential StatelessScope SymbolicScope "
        "Variable activations applications backend callbacks config constraints datasets device distillation "
        "distribution dtype_policies export initializers layers losses metrics mixed_precision models "
        "name_scope ops optimizers preprocessing quantizers random regularizers remat saving tree utils "
        "version visualization wrappers"
    ),
    "keras.activations": _names(
        "celu deserialize elu exponential gelu get glu hard_shrink hard_sigmoid hard_silu hard_swish "
        "hard_tanh leaky_relu linear log_sigmoid log_softmax mish relu relu6 selu serialize sigmoid silu "
        "soft_shrink softmax softplus softsign sparse_plus sparse_sigmoid sparsemax squareplus swish tanh "
        "tanh_shrink threshold"
    ),
    "keras.applications": _names(
        "ConvNeXtBase ConvNeXtLarge ConvNeXtSmall ConvNeXtTiny ConvNeXtXLarge DenseNet121 DenseNet169 "
        "DenseNet201 EfficientNetB0 EfficientNetB1 EfficientNetB2 EfficientNetB3 EfficientNetB4 "
        "EfficientNetB5 EfficientNetB6 EfficientNetB7 EfficientNetV2B0 EfficientNetV2B1 EfficientNetV2B2 "
        "EfficientNetV2B3 EfficientNetV2L EfficientNetV2M EfficientNetV2S InceptionResNetV2 InceptionV3 "
        "MobileNet MobileNetV2 MobileNetV3Large MobileNetV3Small NASNetLarge NASNetMobile ResNet101 "
        "ResNet101V2 ResNet152 ResNet152V2 ResNet50 ResNet50V2 VGG16 VGG19 Xception convnext densenet "
        "efficientnet efficientnet_v2 imagenet_utils inception_resnet_v2 inception_v3 mobilenet mobilenet_v2 "
        "mobilenet_v3 nasnet resnet resnet50 resnet_v2 vgg16 vgg19 xception"
    ),
    "keras.applications.convnext": _names(
        "ConvNeXtBase ConvNeXtLarge ConvNeXtSmall ConvNeXtTiny ConvNeXtXLarge decode_predictions preprocess_input"
    ),
    "keras.applications.densenet": _names("DenseNet121 DenseNet169 DenseNet201 decode_predictions preprocess_input"),
    "keras.applications.efficientnet": _names(
        "EfficientNetB0 EfficientNetB1 EfficientNetB2 EfficientNetB3 EfficientNetB4 EfficientNetB5 "
        "EfficientNetB6 EfficientNetB7 decode_predictions preprocess_input"
    ),
    "keras.applications.efficientnet_v2": _names(
        "EfficientNetV2B0 EfficientNetV2B1 EfficientNetV2B2 EfficientNetV2B3 EfficientNetV2L EfficientNetV2M "
        "EfficientNetV2S decode_predictions preprocess_input"
    ),
    "keras.applications.imagenet_utils": _names("decode_predictions preprocess_input"),
    "keras.applications.inception_resnet_v2": _names("InceptionResNetV2 decode_predictions preprocess_input"),
    "keras.applications.inception_v3": _names("InceptionV3 decode_predictions preprocess_input"),
    "keras.applications.mobilenet": _names("MobileNet decode_predictions preprocess_input"),
    "keras.applications.mobilenet_v2": _names("MobileNetV2 decode_predictions preprocess_input"),
    "keras.applications.mobilenet_v3": _names("decode_predictions preprocess_input"),
    "keras.applications.nasnet": _names("NASNetLarge NASNetMobile decode_predictions preprocess_input"),
    "keras.applications.resnet": _names("ResNet101 ResNet152 ResNet50 decode_predictions preprocess_input"),
    "keras.applications.resnet50": _names("ResNet50 decode_predictions preprocess_input"),
    "keras.applications.resnet_v2": _names("ResNet101V2 ResNet152V2 ResNet50V2 decode_predictions preprocess_input"),
    "keras.applications.vgg16": _names("VGG16 decode_predictions preprocess_input"),
    "keras.applications.vgg19": _names("VGG19 decode_predictions preprocess_input"),
    "keras.applications.xception": _names("Xception decode_predictions preprocess_input"),
    "keras.backend": _names(
        "backend clear_session epsilon floatx get_uid image_data_format is_float_dtype is_int_dtype "
        "is_keras_tensor result_type set_epsilon set_floatx set_image_data_format standardize_dtype"
    ),
    "keras.callbacks": _names(
        "BackupAndRestore CSVLogger Callback CallbackList EarlyStopping History LambdaCallback "
        "LearningRateScheduler ModelCheckpoint OrbaxCheckpoint ProgbarLogger ReduceLROnPlateau RemoteMonitor "
        "SwapEMAWeights TensorBoard TerminateOnNaN"
    ),
    "keras.config": _names(
        "backend disable_flash_attention disable_interactive_logging disable_traceback_filtering dtype_policy "
        "enable_flash_attention enable_interactive_logging enable_traceback_filtering "
        "enable_unsafe_deserialization epsilon floatx image_data_format is_flash_attention_enabled "
        "is_interactive_logging_enabled is_nnx_enabled is_traceback_filtering_enabled max_epochs "
        "max_steps_per_epoch set_backend set_dtype_policy set_epsilon set_floatx set_image_data_format "
        "set_max_epochs set_max_steps_per_epoch"
    ),
    "keras.constraints": _names(
        "Constraint MaxNorm MinMaxNorm NonNeg UnitNorm deserialize get max_norm min_max_norm non_neg serialize unit_norm"
    ),
    "keras.datasets": _names("boston_housing california_housing cifar10 cifar100 fashion_mnist imdb mnist reuters"),
    "keras.datasets.boston_housing": _names("load_data"),
    "keras.datasets.california_housing": _names("load_data"),
    "keras.datasets.cifar10": _names("load_data"),
    "keras.datasets.cifar100": _names("load_data"),
    "keras.datasets.fashion_mnist": _names("load_data"),
    "keras.datasets.imdb": _names("get_word_index load_data"),
    "keras.datasets.mnist": _names("load_data"),
    "keras.datasets.reuters": _names("get_label_names get_word_index load_data"),
    "keras.distillation": _names("DistillationLoss Distiller FeatureDistillation LogitsDistillation"),
    "keras.distribution": _names(
        "DataParallel DeviceMesh LayoutMap ModelParallel TensorLayout distribute_tensor distribution "
        "get_device_count initialize list_devices set_distribution"
    ),
    "keras.dtype_policies": _names(
        "AWQDTypePolicy DTypePolicy DTypePolicyMap FloatDTypePolicy GPTQDTypePolicy Int4DTypePolicy "
        "QuantizedDTypePolicy QuantizedFloat8DTypePolicy deserialize get serialize"
    ),
    "keras.export": _names("ExportArchive"),
    "keras.initializers": _names(
        "Constant GlorotNormal GlorotUniform HeNormal HeUniform Identity IdentityInitializer Initializer "
        "LecunNormal LecunUniform Ones Orthogonal OrthogonalInitializer RandomNormal RandomUniform STFT "
        "STFTInitializer TruncatedNormal VarianceScaling Zeros constant deserialize get glorot_normal "
        "glorot_uniform he_normal he_uniform identity lecun_normal lecun_uniform ones orthogonal "
        "random_normal random_uniform serialize stft truncated_normal variance_scaling zeros"
    ),
    "keras.layers": _names(
        "Activation ActivityRegularization AdaptiveAveragePooling1D AdaptiveAveragePooling2D "
        "AdaptiveAveragePooling3D AdaptiveMaxPooling1D AdaptiveMaxPooling2D AdaptiveMaxPooling3D Add "
        "AdditiveAttention AlphaDropout Attention AugMix AutoContrast Average AveragePooling1D "
        "AveragePooling2D AveragePooling3D AvgPool1D AvgPool2D AvgPool3D BatchNormalization Bidirectional "
        "CategoryEncoding CenterCrop Concatenate ContrastLimitedAdaptiveHistogramEqualization Conv1D "
        "Conv1DTranspose Conv2D Conv2DTranspose Conv3D Conv3DTranspose ConvLSTM1D ConvLSTM2D ConvLSTM3D "
        "Convolution1D Convolution1DTranspose Convolution2D Convolution2DTranspose Convolution3D "
        "Convolution3DTranspose Cropping1D Cropping2D Cropping3D CutMix Dense DepthwiseConv1D DepthwiseConv2D "
        "Discretization Dot Dropout ELU EinsumDense Embedding Equalization Flatten FlaxLayer GRU GRUCell "
        "GaussianDropout GaussianNoise GlobalAveragePooling1D GlobalAveragePooling2D GlobalAveragePooling3D "
        "GlobalAvgPool1D GlobalAvgPool2D GlobalAvgPool3D GlobalMaxPool1D GlobalMaxPool2D GlobalMaxPool3D "
        "GlobalMaxPooling1D GlobalMaxPooling2D GlobalMaxPooling3D GroupNormalization GroupQueryAttention "
        "HashedCrossing Hashing Identity Input InputLayer InputSpec IntegerLookup JaxLayer LSTM LSTMCell "
        "Lambda Layer LayerNormalization LeakyReLU Masking MaxNumBoundingBoxes MaxPool1D MaxPool2D MaxPool3D "
        "MaxPooling1D MaxPooling2D MaxPooling3D Maximum MelSpectrogram Minimum MixUp MultiHeadAttention "
        "Multiply Normalization PReLU Permute Pipeline RMSNormalization RNN RandAugment RandomBrightness "
        "RandomColorDegeneration RandomColorJitter RandomContrast RandomCrop RandomElasticTransform "
        "RandomErasing RandomFlip RandomGaussianBlur RandomGrayscale RandomHue RandomInvert RandomPerspective "
        "RandomPosterization RandomRotation RandomSaturation RandomSharpness RandomShear RandomTranslation "
        "RandomZoom ReLU RepeatVector Rescaling Reshape Resizing ReversibleEmbedding STFTSpectrogram "
        "SeparableConv1D SeparableConv2D SeparableConvolution1D SeparableConvolution2D SimpleRNN "
        "SimpleRNNCell Softmax Solarization SpatialDropout1D SpatialDropout2D SpatialDropout3D "
        "SpectralNormalization StackedRNNCells StringLookup Subtract TFSMLayer TextVectorization "
        "TimeDistributed TorchModuleWrapper UnitNormalization UpSampling1D UpSampling2D UpSampling3D Wrapper "
        "ZeroPadding1D ZeroPadding2D ZeroPadding3D add average concatenate deserialize dot maximum minimum "
        "multiply serialize subtract"
    ),
    "keras.losses": _names(
        "BinaryCrossentropy BinaryFocalCrossentropy CTC CategoricalCrossentropy CategoricalFocalCrossentropy "
        "CategoricalGeneralizedCrossEntropy CategoricalHinge Circle CosineSimilarity Dice Hinge Huber "
        "KLDivergence LogCosh Loss MeanAbsoluteError MeanAbsolutePercentageError MeanSquaredError "
        "MeanSquaredLogarithmicError Poisson SparseCategoricalCrossentropy SquaredHinge Tversky "
        "binary_crossentropy binary_focal_crossentropy categorical_crossentropy "
        "categorical_focal_crossentropy categorical_generalized_cross_entropy categorical_hinge circle "
        "cosine_similarity ctc deserialize dice get hinge huber kl_divergence log_cosh mean_absolute_error "
        "mean_absolute_percentage_error mean_squared_error mean_squared_logarithmic_error poisson serialize "
        "sparse_categorical_crossentropy squared_hinge tversky"
    ),
    "keras.metrics": _names(
        "AUC Accuracy BinaryAccuracy BinaryCrossentropy BinaryIoU CategoricalAccuracy CategoricalCrossentropy "
        "CategoricalHinge ConcordanceCorrelation CosineSimilarity F1Score FBetaScore FalseNegatives "
        "FalsePositives Hinge IoU KLDivergence LogCoshError Mean MeanAbsoluteError "
        "MeanAbsolutePercentageError MeanIoU MeanMetricWrapper MeanSquaredError MeanSquaredLogarithmicError "
        "Metric OneHotIoU OneHotMeanIoU PearsonCorrelation Poisson Precision PrecisionAtRecall R2Score Recall "
        "RecallAtPrecision RootMeanSquaredError SensitivityAtSpecificity SparseCategoricalAccuracy "
        "SparseCategoricalCrossentropy SparseTopKCategoricalAccuracy SpecificityAtSensitivity SquaredHinge "
        "Sum TopKCategoricalAccuracy TrueNegatives TruePositives binary_accuracy binary_crossentropy "
        "binary_focal_crossentropy categorical_accuracy categorical_crossentropy "
        "categorical_focal_crossentropy categorical_hinge concordance_correlation deserialize get hinge huber "
        "kl_divergence log_cosh mean_absolute_error mean_absolute_percentage_error mean_squared_error "
        "mean_squared_logarithmic_error pearson_correlation poisson serialize sparse_categorical_accuracy "
        "sparse_categorical_crossentropy sparse_top_k_categorical_accuracy squared_hinge "
        "top_k_categorical_accuracy"
    ),
    "keras.mixed_precision": _names(
        "DTypePolicy LossScaleOptimizer Policy dtype_policy global_policy set_dtype_policy set_global_policy"
    ),
    "keras.models": _names("Model Sequential clone_model load_model model_from_json save_model"),
    "keras.ops": _names(
        "abs absolute adaptive_average_pool adaptive_max_pool add all allclose amax amin angle any append "
        "arange arccos arccosh arcsin arcsinh arctan arctan2 arctanh argmax argmin argpartition argsort array "
        "array_split associative_scan average average_pool bartlett batch_normalization binary_crossentropy "
        "bincount bitwise_and bitwise_invert bitwise_left_shift bitwise_not bitwise_or bitwise_right_shift "
        "bitwise_xor blackman broadcast_to cast categorical_crossentropy cbrt cdist ceil celu cholesky "
        "cholesky_inverse clip concatenate cond conj conjugate conv conv_transpose convert_to_numpy "
        "convert_to_tensor copy corrcoef correlate cos cosh count_nonzero cross ctc_decode ctc_loss cumprod "
        "cumsum custom_gradient deg2rad depth_to_space depthwise_conv det diag diagflat diagonal diff "
        "digitize divide divide_no_nan dot dot_product_attention dsplit dstack dtype eig eigh einsum elu "
        "empty empty_like equal erf erfc erfinv exp exp2 expand_dims expm1 extract_sequences eye fabs fft "
        "fft2 flip fliplr flipud floor floor_divide fmax fmin fmod fold fori_loop full full_like gcd gelu "
        "geomspace get_item glu greater greater_equal hamming hanning hard_shrink hard_sigmoid hard_silu "
        "hard_swish hard_tanh heaviside histogram hsplit hstack hypot i0 identity ifft2 imag in_top_k inner "
        "inv irfft is_tensor isclose isfinite isin isinf isnan isneginf isposinf isreal istft jvp kaiser kron "
        "layer_normalization lcm ldexp leaky_relu left_shift less less_equal linspace log log10 log1p log2 "
        "log_sigmoid log_softmax logaddexp logaddexp2 logdet logical_and logical_not logical_or logical_xor "
        "logspace logsumexp lstsq lu_factor map matmul matrix_rank max max_pool maximum mean median meshgrid "
        "min minimum mod moments moveaxis multi_hot multiply nan_to_num nanargmax nanargmin nancumprod "
        "nancumsum nanmax nanmean nanmedian nanmin nanpercentile nanprod nanquantile nanstd nansum nanvar "
        "ndim negative nextafter nonzero norm normalize not_equal one_hot ones ones_like outer pad percentile "
        "pinv polar power prod psnr ptp qr quantile rad2deg ravel real rearrange reciprocal relu relu6 repeat "
        "reshape rfft right_shift rms_normalization roll rot90 round rsqrt saturate_cast scan scatter "
        "scatter_update searchsorted segment_max segment_min segment_prod segment_sum select selu "
        "separable_conv shape sigmoid sign signbit silu sin sinc sinh size slice slice_update slogdet "
        "soft_shrink softmax softplus softsign solve solve_triangular sort space_to_depth "
        "sparse_categorical_crossentropy sparse_plus sparse_sigmoid sparsemax split sqrt square squareplus "
        "squeeze stack std stft stop_gradient subtract sum svd swapaxes swish switch take take_along_axis tan "
        "tanh tanh_shrink tensordot threshold tile top_k trace transpose trapezoid tri tril triu true_divide "
        "trunc unfold unique unravel_index unstack vander var vdot vectorize vectorized_map view "
        "view_as_complex view_as_real vsplit vstack where while_loop zeros zeros_like"
    ),
    "keras.optimizers": _names(
        "Adadelta Adafactor Adagrad Adam AdamW Adamax Ftrl Lamb Lion LossScaleOptimizer MultiOptimizer Muon "
        "Nadam Optimizer OptimizerMap RMSprop SGD ScheduleFreeAdamW deserialize get schedules serialize"
    ),
    "keras.optimizers.schedules": _names(
        "CosineDecay CosineDecayRestarts ExponentialDecay InverseTimeDecay LearningRateSchedule "
        "PiecewiseConstantDecay PolynomialDecay deserialize serialize"
    ),
    "keras.preprocessing": _names(
        "image image_dataset_from_directory sequence text_dataset_from_directory timeseries_dataset_from_array"
    ),
    "keras.preprocessing.image": _names("array_to_img img_to_array load_img save_img smart_resize"),
    "keras.preprocessing.sequence": _names("pad_sequences"),
    "keras.quantizers": _names(
        "AWQConfig AbsMaxQuantizer Float8QuantizationConfig GPTQConfig Int4QuantizationConfig "
        "Int8QuantizationConfig QuantizationConfig Quantizer abs_max_quantize "
        "abs_max_quantize_grouped_with_zero_point compute_float8_amax_history compute_float8_scale "
        "deserialize fake_quant_with_min_max_vars get pack_int4 quantize_and_dequantize serialize unpack_int4"
    ),
    "keras.random": _names(
        "SeedGenerator beta binomial categorical dropout gamma normal randint shuffle truncated_normal uniform"
    ),
    "keras.regularizers": _names(
        "L1 L1L2 L2 OrthogonalRegularizer Regularizer deserialize get l1 l1_l2 l2 orthogonal_regularizer serialize"
    ),
    "keras.saving": _names(
        "CustomObjectScope KerasFileEditor custom_object_scope deserialize_keras_object get_custom_objects "
        "get_registered_name get_registered_object load_model load_weights register_keras_serializable "
        "save_model save_weights serialize_keras_object"
    ),
    "keras.tree": _names(
        "MAP_TO_NONE assert_same_paths assert_same_structure flatten flatten_with_path is_nested "
        "lists_to_tuples map_shape_structure map_structure map_structure_up_to pack_sequence_as traverse"
    ),
    "keras.utils": _names(
        "Config CustomObjectScope FeatureSpace Progbar PyDataset Sequence array_to_img "
        "audio_dataset_from_directory bounding_boxes clear_session custom_object_scope "
        "deserialize_keras_object disable_interactive_logging enable_interactive_logging get_custom_objects "
        "get_file get_registered_name get_registered_object get_source_inputs image_dataset_from_directory "
        "img_to_array is_interactive_logging_enabled is_keras_tensor legacy load_img model_to_dot normalize "
        "pack_x_y_sample_weight pad_sequences plot_model register_keras_serializable save_img "
        "serialize_keras_object set_random_seed split_dataset standardize_dtype text_dataset_from_directory "
        "timeseries_dataset_from_array to_categorical unpack_x_y_sample_weight"
    ),
    "keras.utils.bounding_boxes": _names(
        "affine_transform clip_to_image_size compute_ciou compute_iou convert_format crop "
        "decode_deltas_to_boxes encode_box_to_deltas pad"
    ),
    "keras.utils.legacy": _names("deserialize_keras_object serialize_keras_object"),
    "keras.visualization": _names(
        "draw_bounding_boxes draw_segmentation_masks plot_bounding_box_gallery plot_image_gallery plot_segmentation_mask_gallery"
    ),
    "keras.wrappers": _names("SKLearnClassifier SKLearnRegressor SKLearnTransformer"),
}
