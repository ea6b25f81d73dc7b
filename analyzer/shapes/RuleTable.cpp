//===- RuleTable.cpp - Shape rules: the op tables -------------------------===//
#include "analyzer/shapes/Rules.h"
#include "llvm/ADT/StringMap.h"

namespace ridge::shapes {

struct RuleEntry {
  const char *Name;
  RuleFn Fn;
};

const RuleEntry DefaultRules[] = {
    // Element-wise unary: the input's shape and type.
    {"Abs", ruleUnaryMath}, {"Acos", ruleUnary}, {"Acosh", ruleUnary},
    {"Asin", ruleUnary}, {"Asinh", ruleUnary}, {"Atan", ruleUnary},
    {"Atanh", ruleUnary}, {"BitwiseNot", ruleUnary}, {"Ceil", ruleUnaryMath},
    {"Celu", ruleUnary}, {"Clip", ruleClip}, {"Cos", ruleUnary},
    {"Cosh", ruleUnary}, {"CumSum", ruleCumSum}, {"Elu", ruleUnary},
    {"Erf", ruleUnary}, {"Exp", ruleUnaryMath}, {"Floor", ruleUnaryMath},
    {"Gelu", ruleUnary}, {"HardSigmoid", ruleUnary}, {"HardSwish", ruleUnary},
    {"Hardmax", ruleUnary}, {"Identity", ruleIdentity}, {"LeakyRelu", ruleUnary},
    {"Log", ruleUnaryMath}, {"LogSoftmax", ruleUnary}, {"LpNormalization", ruleUnary},
    {"LRN", ruleUnary}, {"MeanVarianceNormalization", ruleUnary},
    {"Mish", ruleUnary}, {"Neg", ruleUnaryMath}, {"Reciprocal", ruleUnaryMath},
    {"Relu", ruleUnaryMath}, {"Round", ruleUnaryMath}, {"Selu", ruleUnary},
    {"Shrink", ruleUnary}, {"Sigmoid", ruleUnary}, {"Sign", ruleUnaryMath},
    {"Sin", ruleUnary}, {"Sinh", ruleUnary}, {"Softmax", ruleUnary},
    {"Softplus", ruleUnary}, {"Softsign", ruleUnary}, {"Sqrt", ruleUnaryMath},
    {"Swish", ruleUnary}, {"Tan", ruleUnary}, {"Tanh", ruleUnary},
    {"ThresholdedRelu", ruleUnary}, {"Trilu", ruleUnary},
    {"InstanceNormalization", ruleUnary}, {"GroupNormalization", ruleUnary},
    {"ReverseSequence", ruleUnary}, {"Scatter", ruleScatterElements},
    {"ScatterElements", ruleScatterElements}, {"ScatterND", ruleScatterND},
    {"ImageScaler", ruleUnary}, {"Bernoulli", ruleRandomLike},
    {"IsNaN", ruleToBool}, {"IsInf", ruleToBool}, {"Not", ruleNot},
    {"Cast", ruleCast}, {"CastLike", ruleCastLike}, {"Dropout", ruleDropout},
    // Broadcasting.
    {"Add", ruleBroadcast}, {"Sub", ruleBroadcast}, {"Mul", ruleBroadcast},
    {"Div", ruleBroadcast}, {"Pow", ruleBroadcast}, {"Mod", ruleBroadcast},
    {"Max", ruleBroadcast}, {"Min", ruleBroadcast}, {"Sum", ruleBroadcast},
    {"Mean", ruleMean}, {"And", ruleBroadcast}, {"Or", ruleBroadcast},
    {"Xor", ruleBroadcast}, {"Equal", ruleBroadcast}, {"Less", ruleBroadcast},
    {"Greater", ruleBroadcast}, {"LessOrEqual", ruleBroadcast},
    {"GreaterOrEqual", ruleBroadcast}, {"BitShift", ruleBroadcast},
    {"BitwiseAnd", ruleBroadcast}, {"BitwiseOr", ruleBroadcast},
    {"BitwiseXor", ruleBroadcast}, {"PRelu", ruleUnary}, {"Where", ruleWhere},
    // Linear algebra, convolution, pooling, normalization.
    {"MatMul", ruleMatMul}, {"MatMulInteger", ruleMatMulInteger},
    {"QLinearMatMul", ruleQLinearMatMul}, {"Gemm", ruleGemm},
    {"Conv", ruleConv}, {"ConvInteger", ruleConvInteger},
    {"QLinearConv", ruleQLinearConv}, {"ConvTranspose", ruleConvTranspose},
    {"MaxPool", rulePool}, {"AveragePool", rulePool}, {"LpPool", rulePool},
    {"GlobalAveragePool", ruleGlobalPool}, {"GlobalMaxPool", ruleGlobalPool},
    {"GlobalLpPool", ruleGlobalPool}, {"MaxUnpool", ruleMaxUnpool},
    {"RoiAlign", ruleRoiPool}, {"MaxRoiPool", ruleRoiPool},
    {"BatchNormalization", ruleBatchNorm}, {"LayerNormalization", ruleLayerNorm},
    // onnxruntime's RMS norm, registered in the default domain: Y as X, the
    // optional inv_std_var as LayerNormalization's statistics.
    {"SimplifiedLayerNormalization", ruleLayerNorm},
    {"Einsum", ruleEinsum}, {"Det", ruleDet},
    // Reductions.
    {"ReduceSum", ruleReduce}, {"ReduceMean", ruleReduce},
    {"ReduceMax", ruleReduce}, {"ReduceMin", ruleReduce},
    {"ReduceProd", ruleReduce}, {"ReduceL1", ruleReduce},
    {"ReduceL2", ruleReduce}, {"ReduceLogSum", ruleReduce},
    {"ReduceLogSumExp", ruleReduce}, {"ReduceSumSquare", ruleReduce},
    {"ArgMax", ruleArgMinMax}, {"ArgMin", ruleArgMinMax},
    // Shape manipulation.
    {"Reshape", ruleReshape}, {"Flatten", ruleFlatten},
    {"Transpose", ruleTranspose}, {"Squeeze", ruleSqueeze},
    {"Unsqueeze", ruleUnsqueeze}, {"Concat", ruleConcat}, {"Split", ruleSplit},
    {"Slice", ruleSlice}, {"Gather", ruleGather},
    {"GatherElements", ruleGatherElements}, {"GatherND", ruleGatherND},
    {"Expand", ruleExpand}, {"Tile", ruleTile}, {"Pad", rulePad},
    {"Shape", ruleShape}, {"Size", ruleSize}, {"Constant", ruleConstant},
    {"ConstantOfShape", ruleConstantOfShape}, {"Range", ruleRange},
    {"Resize", ruleResize}, {"Upsample", ruleResize}, {"TopK", ruleTopK},
    {"OneHot", ruleOneHot}, {"NonZero", ruleNonZero}, {"Compress", ruleCompress},
    {"Unique", ruleUnique}, {"DepthToSpace", ruleDepthToSpace},
    {"SpaceToDepth", ruleDepthToSpace}, {"GridSample", ruleGridSample},
    {"CenterCropPad", ruleCenterCropPad},
    // Generators, random, quantization, losses, signal.
    {"EyeLike", ruleEyeLike}, {"RandomNormal", ruleRandom},
    {"RandomUniform", ruleRandom}, {"RandomNormalLike", ruleRandomLike},
    {"RandomUniformLike", ruleRandomLike}, {"Multinomial", ruleMultinomial},
    {"QuantizeLinear", ruleQuantize}, {"DequantizeLinear", ruleDequantize},
    {"DynamicQuantizeLinear", ruleDynamicQuantize},
    {"SoftmaxCrossEntropyLoss", ruleLoss},
    {"NegativeLogLikelihoodLoss", ruleLoss}, {"HannWindow", ruleWindow},
    {"HammingWindow", ruleWindow}, {"BlackmanWindow", ruleWindow},
    {"MelWeightMatrix", ruleMelWeightMatrix}, {"DFT", ruleDFT},
    {"STFT", ruleSTFT},
    // Recurrent networks, control flow, sequences and optionals.
    {"RNN", ruleRNN}, {"GRU", ruleRNN}, {"LSTM", ruleRNN},
    // Opset 23: attention and friends.
    {"Attention", ruleAttention}, {"RMSNormalization", ruleUnary},
    {"RotaryEmbedding", ruleUnary}, {"TensorScatter", ruleUnary},
    {"Col2Im", ruleCol2Im}, {"AffineGrid", ruleAffineGrid},
    {"DeformConv", ruleConv}, {"ImageDecoder", ruleImageDecoder},
    {"RegexFullMatch", ruleToBool}, {"StringSplit", ruleStringSplit},
    {"StringConcat", ruleStringConcat},
    {"If", ruleIf}, {"Loop", ruleLoop}, {"Scan", ruleScan},
    {"SequenceLength", ruleSequenceLength},
    {"OptionalHasElement", ruleOptionalHasElement},
    {"SequenceConstruct", ruleSequenceConstruct},
    {"SequenceEmpty", ruleSequenceEmpty}, {"SequenceInsert", ruleSequenceInsert},
    {"SequenceErase", ruleSequenceErase}, {"SequenceAt", ruleSequenceAt},
    {"SplitToSequence", ruleSplitToSequence},
    {"ConcatFromSequence", ruleConcatFromSequence},
    {"SequenceMap", ruleSequenceMap}, {"Optional", ruleOptional},
    {"OptionalGetElement", ruleOptionalGetElement},
    // Text, detection.
    {"NonMaxSuppression", ruleNonMaxSuppression},
    {"StringNormalizer", ruleStringNormalizer},
    {"TfIdfVectorizer", ruleTfIdfVectorizer},
};

const RuleEntry TrainingRules[] = {
    {"Adagrad", ruleOptimizer}, {"Adam", ruleOptimizer},
    {"Momentum", ruleOptimizer}, {"Gradient", ruleGradient},
};

const RuleEntry MicrosoftRules[] = {
    {"Gelu", ruleUnary}, {"FastGelu", ruleUnary}, {"QuickGelu", ruleUnary},
    {"BiasGelu", ruleMsBiasGelu}, {"BiasAdd", ruleMsBiasGelu},
    {"FusedMatMul", ruleMsFusedMatMul}, {"MatMulNBits", ruleMsMatMulNBits},
    {"GatherBlockQuantized", ruleMsGatherBlockQuantized},
    {"SkipLayerNormalization", ruleMsSkipLayerNorm},
    {"SkipSimplifiedLayerNormalization", ruleMsSkipLayerNorm},
    // Y as X; the optional inv_std_var one f32 (stash_type) per row.
    {"SimplifiedLayerNormalization", ruleLayerNorm},
    {"LayerNormalization", ruleLayerNorm}, {"RotaryEmbedding", ruleUnary},
    {"Attention", ruleMsAttention},
    {"MultiHeadAttention", ruleMsMultiHeadAttention},
    {"GroupQueryAttention", ruleMsMultiHeadAttention},
    {"FusedConv", ruleConv},
};

static const llvm::StringMap<RuleFn> &ruleMap(StringRef Domain) {
  static const llvm::StringMap<RuleFn> Default = [] {
    llvm::StringMap<RuleFn> M;
    for (const RuleEntry &E : DefaultRules)
      M[E.Name] = E.Fn;
    return M;
  }();
  static const llvm::StringMap<RuleFn> Microsoft = [] {
    llvm::StringMap<RuleFn> M;
    for (const RuleEntry &E : MicrosoftRules)
      M[E.Name] = E.Fn;
    return M;
  }();
  static const llvm::StringMap<RuleFn> Training = [] {
    llvm::StringMap<RuleFn> M;
    for (const RuleEntry &E : TrainingRules)
      M[E.Name] = E.Fn;
    return M;
  }();
  static const llvm::StringMap<RuleFn> None;
  if (Domain.empty() || Domain == "ai.onnx")
    return Default;
  if (Domain == "com.microsoft")
    return Microsoft;
  if (Domain == "ai.onnx.preview.training")
    return Training;
  return None;
}

RuleFn findRule(StringRef Domain, StringRef Op) {
  const auto &M = ruleMap(Domain);
  auto It = M.find(Op);
  return It == M.end() ? nullptr : It->second;
}

} // namespace ridge::shapes
