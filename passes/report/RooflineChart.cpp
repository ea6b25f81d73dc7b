//===- RooflineChart.cpp - The roofline as an SVG or HTML chart -----------===//
//
// Layout (pixels): a 1040 x 660 canvas; the plot area on the left, the legend
// in a column on its right, the title above. Coordinates are printed with one
// decimal and every number with a fixed format, and points, op types and
// roofs are visited in a fixed order, so that the file is reproducible.
//
//===----------------------------------------------------------------------===//
#include "passes/report/RooflineChart.h"
#include "passes/report/Markup.h"
#include "passes/report/HtmlReport.h"
#include "analyzer/Config.h"
#include "devices/Device.h"
#include "analyzer/Diagnostics.h"
#include "analyzer/ir/IR.h"
#include "passes/cost/CostModel.h"
#include "analyzer/Format.h"
#include "passes/roofline/Roofline.h"
#include "llvm/Support/FileSystem.h"
#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

using namespace ridge;

namespace {

// Canvas and plot area.
constexpr double Width = 1040, Height = 660;
constexpr double PlotL = 92, PlotT = 72, PlotW = 640, PlotH = 500;
constexpr double PlotR = PlotL + PlotW, PlotB = PlotT + PlotH;
constexpr double LegendX = 764;
constexpr int MaxDecades = 12;     ///< widest axis range
constexpr double FlatLabelRoom = 200; ///< pixels of flat roof right of the ridge
constexpr size_t LegendTypes = 12; ///< op types named in the legend
constexpr double MinRadius = 2, MaxRadius = 12;

// A fixed palette for the legend's op types (assigned by sorted name); every
// other op type is drawn in OtherColor.
const char *const Palette[LegendTypes] = {
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
    "#e377c2", "#bcbd22", "#17becf", "#393b79", "#e7ba52", "#637939"};
const char *const OtherColor = "#9e9e9e";

std::string fmt(const char *F, ...) __attribute__((format(printf, 1, 2)));
std::string fmt(const char *F, ...) {
  char Buf[512];
  va_list Args;
  va_start(Args, F);
  int N = std::vsnprintf(Buf, sizeof(Buf), F, Args);
  va_end(Args);
  if (N < 0)
    return std::string();
  return std::string(Buf, std::min<size_t>(N, sizeof(Buf) - 1));
}

/// A coordinate or length in pixels.
std::string px(double V) {
  if (!std::isfinite(V))
    V = 0;
  std::string S = fmt("%.1f", V);
  if (S == "-0.0")
    S = "0.0";
  return S;
}


/// Three significant digits without an exponent, as siNumber prints them.
std::string sig3(double X) {
  double A = std::fabs(X);
  return A >= 99.95 ? fmt("%.0f", X) : A >= 9.995 ? fmt("%.1f", X) : fmt("%.2f", X);
}

std::string seconds(double S) {
  if (S <= 0)
    return "0 s";
  if (S >= 1)
    return sig3(S) + " s";
  if (S >= 1e-3)
    return sig3(S * 1e3) + " ms";
  if (S >= 1e-6)
    return sig3(S * 1e6) + " \xC2\xB5s"; // micro sign
  return sig3(S * 1e9) + " ns";
}

std::string intensityText(double I) {
  return I >= 1 && I < 1e6 ? sig3(I) : fmt("%.3g", I);
}

std::string percent(double Fraction) { return fmt("%.1f%%", Fraction * 100); }

/// "10" with a superscript exponent (U+2212 for the minus sign).
std::string powerOfTen(int E) {
  std::string Exp = E < 0 ? "\xE2\x88\x92" + std::to_string(-E) : std::to_string(E);
  return "10<tspan dy=\"-6\" font-size=\"9\">" + Exp + "</tspan>";
}

/// Decade labels of the FLOP/s axis: 1 G, 10 G, 100 G, 1 T, ...
std::string flopsTick(int E) {
  static const char *Prefix[] = {"", " K", " M", " G", " T", " P", " E", " Z", " Y"};
  if (E < 0 || E >= 27)
    return powerOfTen(E);
  static const char *Mantissa[] = {"1", "10", "100"};
  return std::string(Mantissa[E % 3]) + Prefix[E / 3];
}

struct Point {
  size_t Node;
  bool Backward;
  double X, Y;        ///< intensity, achieved FLOP/s
  double Share;       ///< of step time, multiplier applied
  double Radius;
  std::string OpType; ///< legend key
};

struct OpTypeRow {
  std::string Key;
  double Seconds = 0;
  const char *Color = OtherColor;
  bool Other = false; ///< the row that sums the types not named
};

std::string opKey(const Node &N) {
  if (N.Domain.empty() || N.Domain == "ai.onnx")
    return N.OpType.str();
  return (N.OpType.ref() + " (" + N.Domain.ref() + ")").str();
}

class Chart {
public:
  Chart(llvm::raw_ostream &OS, const Model &M, const CostResult &C,
        const RooflineResult &R, const Config &Cfg)
      : OS(OS), M(M), C(C), R(R), Cfg(Cfg) {}

  void render(bool Html, bool Element);

private:
  llvm::raw_ostream &OS;
  const Model &M;
  const CostResult &C;
  const RooflineResult &R;
  const Config &Cfg;
  const Device *Dev = nullptr;

  double Beta = 0, BetaEff = 0, CacheBeta = 0;
  double EffC = 1, EffM = 1;
  struct Flat {
    double Peak;
    std::string Label;
  };
  std::vector<Flat> Flats; ///< matrix first, then vector when different
  double TopPeak = 0;      ///< the highest flat roof
  double StepS = 0;

  std::vector<Point> Points;
  std::vector<OpTypeRow> Legend; ///< named types by time, then "other"
  size_t OtherTypes = 0;
  size_t Unplotted = 0;
  double UnplottedS = 0;
  size_t Clipped = 0;

  int XLo = 0, XHi = 1, YLo = 0, YHi = 1; ///< decades

  double x(double I) const {
    return PlotL + (std::log10(I) - XLo) / (XHi - XLo) * PlotW;
  }
  double y(double P) const {
    return PlotB - (std::log10(P) - YLo) / (YHi - YLo) * PlotH;
  }

  void collect();
  void chooseRanges();
  void writeAxes();
  void writeRoofs();
  void writePoints();
  void writeLegend();
  void writeSvg();
  std::string tooltip(const Point &P) const;
};

void Chart::collect() {
  Dev = R.Dev ? R.Dev : Cfg.Dev;
  Beta = R.Bandwidth;
  EffC = Dev ? Dev->EffCompute : 1;
  EffM = Dev ? Dev->EffMemory : 1;
  BetaEff = Beta * EffM;
  CacheBeta = Dev ? Dev->CacheBandwidth : 0;
  StepS = R.stepSeconds();

  std::string DT = dtypeName(R.StepType).str();
  bool Tf32 = R.StepType == DType::Float && Cfg.TF32 && Dev && Dev->Tf32Flops > 0;
  bool SameVector = std::fabs(R.VectorPeak - R.MatrixPeak) <= 1e-9 * R.MatrixPeak ||
                    R.VectorPeak <= 0;
  Flats.push_back({R.MatrixPeak, DT + (Tf32 ? " (tf32 tensor cores)" : "") + " peak " +
                                     siNumber(R.MatrixPeak, "FLOP/s")});
  if (!SameVector)
    Flats.push_back({R.VectorPeak, "f32 vector peak " + siNumber(R.VectorPeak, "FLOP/s")});
  TopPeak = 0;
  for (const Flat &F : Flats)
    TopPeak = std::max(TopPeak, F.Peak);

  // Time per op type over every modeled phase; points for those that can be
  // placed on log-log axes.
  std::map<std::string, double> TypeSeconds;
  for (size_t I = 0; I < C.Nodes.size() && I < R.Nodes.size(); ++I) {
    const NodeCost &NC = C.Nodes[I];
    if (!NC.Modeled || !NC.N || NC.multiplier() <= 0)
      continue;
    std::string Key = opKey(*NC.N);
    for (bool Bwd : {false, true}) {
      if (Bwd && !NC.NeedsBackward)
        continue;
      const PhaseCost &PC = Bwd ? NC.Bwd : NC.Fwd;
      const PlacedPhase &PT = Bwd ? R.Nodes[I].Bwd : R.Nodes[I].Fwd;
      if (!(PT.Seconds > 0))
        continue;
      double S = PT.Seconds * NC.multiplier();
      TypeSeconds[Key] += S;
      double Rate = PC.Flops / PT.Seconds;
      double Intensity = ridge::intensity(PC);
      if (!(PC.Flops > 0) || !std::isfinite(Intensity) || !(Intensity > 0) ||
          !std::isfinite(Rate)) {
        ++Unplotted;
        UnplottedS += S;
        continue;
      }
      Point P;
      P.Node = I;
      P.Backward = Bwd;
      P.X = Intensity;
      P.Y = Rate;
      P.Share = StepS > 0 ? S / StepS : 0;
      P.Radius = std::clamp(MaxRadius * std::sqrt(P.Share), MinRadius, MaxRadius);
      P.OpType = Key;
      Points.push_back(std::move(P));
    }
  }

  // The legend: the top LegendTypes op types by time (ties by name), colored
  // in the order of their names; the rest are "other".
  std::vector<OpTypeRow> Rows;
  for (const auto &[Key, S] : TypeSeconds)
    Rows.push_back({Key, S, OtherColor, false});
  std::stable_sort(Rows.begin(), Rows.end(), [](const OpTypeRow &A, const OpTypeRow &B) {
    return A.Seconds > B.Seconds;
  });
  OpTypeRow Other{"other", 0, OtherColor, true};
  if (Rows.size() > LegendTypes) {
    for (size_t I = LegendTypes; I < Rows.size(); ++I)
      Other.Seconds += Rows[I].Seconds;
    OtherTypes = Rows.size() - LegendTypes;
    Rows.resize(LegendTypes);
  }
  std::vector<std::string> Names;
  for (const OpTypeRow &Row : Rows)
    Names.push_back(Row.Key);
  std::sort(Names.begin(), Names.end());
  for (OpTypeRow &Row : Rows)
    Row.Color = Palette[std::lower_bound(Names.begin(), Names.end(), Row.Key) - Names.begin()];
  Legend = std::move(Rows);
  if (OtherTypes)
    Legend.push_back(Other);

  // Larger markers first, so that small ones stay visible on top.
  std::sort(Points.begin(), Points.end(), [](const Point &A, const Point &B) {
    if (A.Radius != B.Radius)
      return A.Radius > B.Radius;
    if (A.Node != B.Node)
      return A.Node < B.Node;
    return A.Backward < B.Backward;
  });
}

void Chart::chooseRanges() {
  // x: the points and the ridge points, with at least half a decade of
  // flat roof right of the highest ridge and a decade of slope left of the
  // lowest.
  double Lo = INFINITY, Hi = 0;
  for (const Point &P : Points) {
    Lo = std::min(Lo, P.X);
    Hi = std::max(Hi, P.X);
  }
  double RidgeHi = TopPeak / BetaEff, RidgeLo = TopPeak / Beta;
  for (const Flat &F : Flats) {
    RidgeLo = std::min({RidgeLo, F.Peak / Beta, F.Peak * EffC / BetaEff});
    RidgeHi = std::max({RidgeHi, F.Peak / Beta, F.Peak * EffC / BetaEff});
  }
  if (!(RidgeLo > 0) || !std::isfinite(RidgeHi))
    RidgeLo = RidgeHi = 1;
  Lo = std::min(Lo, RidgeLo);
  Hi = std::max(Hi, RidgeHi);
  XLo = static_cast<int>(std::floor(std::log10(Lo) + 1e-9));
  XHi = static_cast<int>(std::ceil(std::log10(Hi) - 1e-9));
  XHi = std::max(XHi, static_cast<int>(std::ceil(std::log10(RidgeHi) + 0.5)));
  XLo = std::min(XLo, static_cast<int>(std::floor(std::log10(RidgeLo) - 1)));
  for (bool Left = false; XHi - XLo < 4; Left = !Left)
    Left ? --XLo : ++XHi;
  if (XHi - XLo > MaxDecades)
    XLo = XHi - MaxDecades;
  // Room right of the highest ridge for the flat roofs' labels.
  while (XHi - XLo < MaxDecades &&
         (XHi - std::log10(RidgeHi)) * PlotW / (XHi - XLo) < FlatLabelRoom)
    ++XHi;

  // y: the points and the roofs, room above the highest roof for its label.
  double YMin = INFINITY;
  for (const Point &P : Points)
    YMin = std::min(YMin, P.Y);
  double Top = TopPeak > 0 && std::isfinite(TopPeak) ? TopPeak : 1;
  YHi = static_cast<int>(std::ceil(std::log10(Top) - 1e-9));
  YLo = std::isfinite(YMin) ? static_cast<int>(std::floor(std::log10(YMin) + 1e-9)) : YHi - 4;
  for (const Flat &F : Flats)
    if (F.Peak > 0)
      YLo = std::min(YLo, static_cast<int>(std::floor(std::log10(F.Peak * EffC) + 1e-9)));
  YLo = std::min(YLo, YHi - 3);
  if (YHi - YLo > MaxDecades)
    YLo = YHi - MaxDecades;
  if ((YHi - std::log10(Top)) * PlotH / (YHi - YLo) < 15)
    ++YHi;

  for (const Point &P : Points) {
    double LX = std::log10(P.X), LY = std::log10(P.Y);
    if (LX < XLo || LX > XHi || LY < YLo || LY > YHi)
      ++Clipped;
  }
}

void Chart::writeAxes() {
  OS << "<g id=\"axes\" fill=\"#333333\">\n";
  // Decade grid lines, then minor ticks at 2..9 x each decade.
  for (int E = XLo; E <= XHi; ++E) {
    double X = x(std::pow(10.0, E));
    if (E > XLo && E < XHi)
      OS << "<line x1=\"" << px(X) << "\" y1=\"" << px(PlotT) << "\" x2=\"" << px(X)
         << "\" y2=\"" << px(PlotB) << "\" stroke=\"#e6e6e6\"/>\n";
    OS << "<line x1=\"" << px(X) << "\" y1=\"" << px(PlotB) << "\" x2=\"" << px(X)
       << "\" y2=\"" << px(PlotB + 6) << "\" stroke=\"#333333\"/>\n";
    OS << "<text x=\"" << px(X) << "\" y=\"" << px(PlotB + 22)
       << "\" text-anchor=\"middle\">" << powerOfTen(E) << "</text>\n";
    for (int K = 2; E < XHi && K <= 9; ++K) {
      double XM = x(K * std::pow(10.0, E));
      OS << "<line x1=\"" << px(XM) << "\" y1=\"" << px(PlotB) << "\" x2=\"" << px(XM)
         << "\" y2=\"" << px(PlotB + 3) << "\" stroke=\"#333333\"/>\n";
    }
  }
  for (int E = YLo; E <= YHi; ++E) {
    double Y = y(std::pow(10.0, E));
    if (E > YLo && E < YHi)
      OS << "<line x1=\"" << px(PlotL) << "\" y1=\"" << px(Y) << "\" x2=\"" << px(PlotR)
         << "\" y2=\"" << px(Y) << "\" stroke=\"#e6e6e6\"/>\n";
    OS << "<line x1=\"" << px(PlotL - 6) << "\" y1=\"" << px(Y) << "\" x2=\"" << px(PlotL)
       << "\" y2=\"" << px(Y) << "\" stroke=\"#333333\"/>\n";
    OS << "<text x=\"" << px(PlotL - 9) << "\" y=\"" << px(Y + 4)
       << "\" text-anchor=\"end\">" << flopsTick(E) << "</text>\n";
    for (int K = 2; E < YHi && K <= 9; ++K) {
      double YM = y(K * std::pow(10.0, E));
      OS << "<line x1=\"" << px(PlotL - 3) << "\" y1=\"" << px(YM) << "\" x2=\""
         << px(PlotL) << "\" y2=\"" << px(YM) << "\" stroke=\"#333333\"/>\n";
    }
  }
  OS << "<rect x=\"" << px(PlotL) << "\" y=\"" << px(PlotT) << "\" width=\"" << px(PlotW)
     << "\" height=\"" << px(PlotH) << "\" fill=\"none\" stroke=\"#333333\"/>\n";
  OS << "<text x=\"" << px(PlotL + PlotW / 2) << "\" y=\"" << px(PlotB + 48)
     << "\" text-anchor=\"middle\" font-size=\"13\">operational intensity (FLOP/byte)</text>\n";
  OS << "<text transform=\"translate(" << px(PlotL - 64) << " " << px(PlotT + PlotH / 2)
     << ") rotate(-90)\" text-anchor=\"middle\" font-size=\"13\">attainable performance "
        "(FLOP/s)</text>\n";
  OS << "</g>\n";
}

void Chart::writeRoofs() {
  double XL = std::pow(10.0, XLo), XR = std::pow(10.0, XHi);
  // Screen angle of a unit log-log slope, for the labels along the slopes.
  double PxX = PlotW / (XHi - XLo), PxY = PlotH / (YHi - YLo);
  double Angle = std::atan2(PxY, PxX);
  double Deg = Angle * 180 / M_PI;
  // A label along the slope B*I, a fraction of the way along its visible part.
  auto SlopeLabel = [&](double B, double Peak, double Along, double Offset,
                        const std::string &Text, const char *Color) {
    double Start = std::max(std::log10(XL), std::log10(std::pow(10.0, YLo) / B));
    double End = std::min(std::log10(Peak / B), std::log10(XR));
    if (!(End > Start))
      return;
    double LI = Start + Along * (End - Start);
    double X = x(std::pow(10.0, LI)), Y = y(B * std::pow(10.0, LI));
    // Offset perpendicular to the line: up-left for positive Offset.
    X -= Offset * std::sin(Angle);
    Y -= Offset * std::cos(Angle);
    OS << "<text transform=\"translate(" << px(X) << " " << px(Y) << ") rotate("
       << px(-Deg) << ")\" fill=\"" << Color << "\">" << xmlText(Text) << "</text>\n";
  };
  auto Line = [&](double X1, double Y1, double X2, double Y2, const char *Style) {
    OS << "<polyline points=\"" << px(x(X1)) << "," << px(y(Y1)) << " " << px(x(X2)) << ","
       << px(y(Y2)) << "\" fill=\"none\" " << Style << "/>\n";
  };

  OS << "<g id=\"roofs\" clip-path=\"url(#ridge-plot)\" font-size=\"11\">\n";
  if (CacheBeta > 0) {
    Line(XL, CacheBeta * XL, TopPeak / CacheBeta, TopPeak,
         "stroke=\"#9a9a9a\" stroke-width=\"1.2\" stroke-dasharray=\"2 3\"");
    SlopeLabel(CacheBeta, TopPeak, 0.55, 5, "cache " + siNumber(CacheBeta, "B/s"), "#777777");
  }
  const char *Solid = "stroke=\"#222222\" stroke-width=\"2\"";
  const char *Dashed = "stroke=\"#222222\" stroke-width=\"1.3\" stroke-dasharray=\"6 4\"";
  bool Derated = EffC != 1 || EffM != 1;
  // The memory slope up to the highest roof, then each flat roof.
  Line(XL, Beta * XL, TopPeak / Beta, TopPeak, Solid);
  if (Derated)
    Line(XL, BetaEff * XL, TopPeak * EffC / BetaEff, TopPeak * EffC, Dashed);
  // Labels at the right end: the highest roof's above its line, with its
  // derated value under the dashed line where there is room; a lower roof's
  // under its own lines.
  size_t Top = Flats.size() > 1 && Flats[1].Peak > Flats[0].Peak ? 1 : 0;
  for (size_t I = 0; I < Flats.size(); ++I) {
    const Flat &F = Flats[I];
    const char *Color = I == 0 ? "#222222" : "#666666";
    std::string S = fmt("stroke=\"%s\" stroke-width=\"%s\"", Color, I == 0 ? "2" : "1.5");
    Line(F.Peak / Beta, F.Peak, XR, F.Peak, S.c_str());
    std::string D = S + " stroke-dasharray=\"6 4\"";
    if (Derated)
      Line(F.Peak * EffC / BetaEff, F.Peak * EffC, XR, F.Peak * EffC, D.c_str());
    double LowestY = y(F.Peak * (Derated ? EffC : 1));
    if (I == Top) {
      OS << "<text x=\"" << px(PlotR - 6) << "\" y=\"" << px(y(F.Peak) - 6)
         << "\" text-anchor=\"end\" fill=\"" << Color << "\">" << xmlText(F.Label)
         << "</text>\n";
      bool Room = Flats.size() == 1 || y(Flats[1 - Top].Peak) - LowestY >= 40;
      if (Derated && Room)
        OS << "<text x=\"" << px(PlotR - 6) << "\" y=\"" << px(LowestY + 14)
           << "\" text-anchor=\"end\" fill=\"" << Color << "\">derated \xC3\x97"
           << fmt("%.2f", EffC) << ": " << siNumber(F.Peak * EffC, "FLOP/s") << "</text>\n";
    } else {
      OS << "<text x=\"" << px(PlotR - 6) << "\" y=\"" << px(LowestY + 14)
         << "\" text-anchor=\"end\" fill=\"" << Color << "\">" << xmlText(F.Label)
         << "</text>\n";
    }
  }
  // Both memory labels above the datasheet slope, where no point can be.
  SlopeLabel(Beta, TopPeak, 0.12, Derated ? 20 : 6, "memory " + siNumber(Beta, "B/s"),
             "#222222");
  if (Derated)
    SlopeLabel(Beta, TopPeak, 0.12, 6,
               "derated \xC3\x97" + fmt("%.2f", EffM) + ": " + siNumber(BetaEff, "B/s"),
               "#222222");

  // The ridge point of the step dtype's peak.
  double Ridge = R.RidgePoint > 0 ? R.RidgePoint : R.MatrixPeak / Beta;
  if (Ridge > 0 && std::isfinite(Ridge)) {
    double X = x(Ridge);
    OS << "<line x1=\"" << px(X) << "\" y1=\"" << px(y(R.MatrixPeak)) << "\" x2=\"" << px(X)
       << "\" y2=\"" << px(PlotB) << "\" stroke=\"#222222\" stroke-width=\"1.2\" "
          "stroke-dasharray=\"1.5 3\"/>\n";
    OS << "<text transform=\"translate(" << px(X - 5) << " " << px(PlotB - 8)
       << ") rotate(-90)\" fill=\"#222222\">ridge point " << fmt("%.1f", Ridge)
       << " FLOP/B</text>\n";
  }
  OS << "</g>\n";
}

std::string Chart::tooltip(const Point &P) const {
  const NodeCost &NC = C.Nodes[P.Node];
  const PhaseCost &PC = P.Backward ? NC.Bwd : NC.Fwd;
  PhaseTime PT = R.terms(C, NC, P.Backward, Cfg);
  std::string S = xmlText(NC.N->Name) + " (" + xmlText(P.OpType) + ")\n";
  S += P.Backward ? "backward\n" : "forward\n";
  S += "FLOPs " + siNumber(PC.Flops) + " (" + withCommas(PC.Flops) + ")\n";
  S += "bytes " + siNumber(PC.Bytes, "B") + " (" + withCommas(PC.Bytes) + ")\n";
  S += "intensity " + intensityText(ridge::intensity(PC)) + " FLOP/B\n";
  S += "time " + seconds(PT.Seconds);
  if (NC.multiplier() != 1)
    S += " \xC3\x97 " + exactNumber(NC.multiplier());
  S += " (" + percent(P.Share) + " of step)\n";
  S += "achieved " + siNumber(P.Y, "FLOP/s") + ", attainable " +
       siNumber(attainable(PC, PT), "FLOP/s") + "\n";
  S += std::string("bound ") + boundName(PT.B);
  return S;
}

void Chart::writePoints() {
  std::map<std::string, const char *> ColorOf;
  for (const OpTypeRow &Row : Legend)
    if (!Row.Other)
      ColorOf[Row.Key] = Row.Color;
  OS << "<g id=\"points\" clip-path=\"url(#ridge-plot)\">\n";
  for (const Point &P : Points) {
    auto It = ColorOf.find(P.OpType);
    const char *Color = It == ColorOf.end() ? OtherColor : It->second;
    OS << "<circle class=\"pt\" cx=\"" << px(x(P.X)) << "\" cy=\"" << px(y(P.Y))
       << "\" r=\"" << px(P.Radius) << "\" ";
    if (P.Backward)
      OS << "fill=\"none\" stroke=\"" << Color
         << "\" stroke-width=\"1.6\" pointer-events=\"visible\">";
    else
      OS << "fill=\"" << Color
         << "\" fill-opacity=\"0.8\" stroke=\"#ffffff\" stroke-width=\"0.7\">";
    OS << "<title>" << tooltip(P) << "</title></circle>\n";
  }
  OS << "</g>\n";
}

void Chart::writeLegend() {
  double Y = PlotT + 4;
  OS << "<g id=\"legend\" font-size=\"11\">\n";
  OS << "<text x=\"" << px(LegendX) << "\" y=\"" << px(Y)
     << "\" font-weight=\"bold\">op type</text>\n";
  OS << "<text x=\"" << px(Width - 12) << "\" y=\"" << px(Y)
     << "\" text-anchor=\"end\" font-weight=\"bold\">share of step</text>\n";
  Y += 18;
  for (const OpTypeRow &Row : Legend) {
    std::string Name = Row.Other
                           ? fmt("other (%zu types)", OtherTypes)
                           : xmlText(Row.Key, 26);
    OS << "<circle cx=\"" << px(LegendX + 5) << "\" cy=\"" << px(Y - 4) << "\" r=\"5\" fill=\""
       << Row.Color << "\"/>\n";
    OS << "<text x=\"" << px(LegendX + 16) << "\" y=\"" << px(Y) << "\">" << Name
       << "</text>\n";
    OS << "<text x=\"" << px(Width - 12) << "\" y=\"" << px(Y) << "\" text-anchor=\"end\">"
       << (StepS > 0 ? percent(Row.Seconds / StepS) : std::string("-")) << "</text>\n";
    Y += 17;
  }
  if (Legend.empty()) {
    OS << "<text x=\"" << px(LegendX) << "\" y=\"" << px(Y)
       << "\" fill=\"#666666\">no modeled phases to plot</text>\n";
    Y += 17;
  }

  // Markers.
  Y += 12;
  OS << "<circle cx=\"" << px(LegendX + 5) << "\" cy=\"" << px(Y - 4)
     << "\" r=\"5\" fill=\"#555555\" fill-opacity=\"0.8\"/>\n";
  OS << "<text x=\"" << px(LegendX + 16) << "\" y=\"" << px(Y) << "\">forward</text>\n";
  OS << "<circle cx=\"" << px(LegendX + 85) << "\" cy=\"" << px(Y - 4)
     << "\" r=\"5\" fill=\"none\" stroke=\"#555555\" stroke-width=\"1.6\"/>\n";
  OS << "<text x=\"" << px(LegendX + 96) << "\" y=\"" << px(Y) << "\">backward</text>\n";
  Y += 22;
  OS << "<text x=\"" << px(LegendX) << "\" y=\"" << px(Y)
     << "\">marker area \xE2\x88\x9D share of step time:</text>\n";
  Y += 22;
  double X = LegendX + 4;
  for (double Share : {0.01, 0.1, 0.5}) {
    double Rad = std::clamp(MaxRadius * std::sqrt(Share), MinRadius, MaxRadius);
    OS << "<circle cx=\"" << px(X + Rad) << "\" cy=\"" << px(Y - 4) << "\" r=\"" << px(Rad)
       << "\" fill=\"#555555\" fill-opacity=\"0.8\"/>\n";
    OS << "<text x=\"" << px(X + 2 * Rad + 5) << "\" y=\"" << px(Y) << "\">"
       << fmt("%.0f%%", Share * 100) << "</text>\n";
    X += 2 * Rad + 48;
  }

  // Lines.
  Y += 26;
  auto Key = [&](const char *Style, const std::string &Text) {
    OS << "<line x1=\"" << px(LegendX) << "\" y1=\"" << px(Y - 4) << "\" x2=\""
       << px(LegendX + 28) << "\" y2=\"" << px(Y - 4) << "\" " << Style << "/>\n";
    OS << "<text x=\"" << px(LegendX + 36) << "\" y=\"" << px(Y) << "\">" << Text
       << "</text>\n";
    Y += 17;
  };
  Key("stroke=\"#222222\" stroke-width=\"2\"", "datasheet peak and bandwidth");
  if (EffC != 1 || EffM != 1)
    Key("stroke=\"#222222\" stroke-width=\"1.3\" stroke-dasharray=\"6 4\"",
        "derated: compute \xC3\x97" + fmt("%.2f", EffC) + ", memory \xC3\x97" +
            fmt("%.2f", EffM));
  if (CacheBeta > 0)
    Key("stroke=\"#9a9a9a\" stroke-width=\"1.2\" stroke-dasharray=\"2 3\"",
        "cache bandwidth");
  Key("stroke=\"#222222\" stroke-width=\"1.2\" stroke-dasharray=\"1.5 3\"",
      "ridge point I* = peak / bandwidth");

  // What the points leave out.
  Y += 10;
  auto Note = [&](const std::string &Text) {
    OS << "<text x=\"" << px(LegendX) << "\" y=\"" << px(Y) << "\" fill=\"#555555\">" << Text
       << "</text>\n";
    Y += 15;
  };
  Note("points: FLOPs / time of each node phase");
  if (Unplotted)
    Note(fmt("not plotted: %zu phase%s with no FLOPs", Unplotted, Unplotted == 1 ? "" : "s") +
         (StepS > 0 ? " (" + percent(UnplottedS / StepS) + ")" : std::string()));
  if (R.OptimizerSeconds > 0)
    Note("optimizer " + seconds(R.OptimizerSeconds) + " (" +
         percent(StepS > 0 ? R.OptimizerSeconds / StepS : 0) + "), not plotted");
  if (R.RecomputeSeconds > 0)
    Note("recomputation " + seconds(R.RecomputeSeconds) + ", not plotted");
  if (Clipped)
    Note(fmt("%zu point%s outside the axes", Clipped, Clipped == 1 ? "" : "s"));
  OS << "</g>\n";
}

void Chart::writeSvg() {
  OS << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << px(Width) << "\" height=\""
     << px(Height) << "\" viewBox=\"0 0 " << px(Width) << " " << px(Height)
     << "\" font-family=\"DejaVu Sans, Arial, Helvetica, sans-serif\" font-size=\"12\">\n";
  OS << "<title>ridge roofline: " << xmlText(M.Path) << "</title>\n";
  OS << "<defs><clipPath id=\"ridge-plot\"><rect x=\"" << px(PlotL) << "\" y=\"" << px(PlotT)
     << "\" width=\"" << px(PlotW) << "\" height=\"" << px(PlotH)
     << "\"/></clipPath></defs>\n";
  OS << "<rect width=\"" << px(Width) << "\" height=\"" << px(Height)
     << "\" fill=\"#ffffff\"/>\n";

  std::string DT = dtypeName(R.StepType).str();
  if (R.StepType == DType::Float && Cfg.TF32 && Dev && Dev->Tf32Flops > 0)
    DT += " (tf32)";
  OS << "<text x=\"" << px(PlotL - 64) << "\" y=\"26\" font-size=\"16\" font-weight=\"bold\">"
     << "Roofline: " << xmlText(M.Path, 100) << "</text>\n";
  OS << "<text x=\"" << px(PlotL - 64) << "\" y=\"48\" fill=\"#444444\">"
     << "device " << xmlText(Dev ? Dev->Name : std::string("?"), 60) << " \xC2\xB7 dtype "
     << xmlText(DT) << " \xC2\xB7 step " << seconds(StepS) << " (forward "
     << seconds(R.FwdSeconds) << ", backward " << seconds(R.BwdSeconds) << ") \xC2\xB7 MFU "
     << percent(R.MFU) << "</text>\n";

  writeAxes();
  writeRoofs();
  writePoints();
  writeLegend();
  OS << "</svg>\n";
}

// The HTML page: the same SVG; a hover box replaces the native tooltips
// (their text moves into data-tip, so that the two do not show together).
const char *const HtmlHead = R"(<meta charset="utf-8">
<meta name="viewport" content="width=device-width">
<style>
body { font-family: "DejaVu Sans", Arial, Helvetica, sans-serif; margin: 16px; color: #222; }
svg { max-width: 100%; height: auto; }
.pt:hover { stroke: #000; stroke-width: 2; }
#tip { position: absolute; display: none; pointer-events: none; background: #fff;
  border: 1px solid #888; border-radius: 3px; padding: 4px 7px; font-size: 12px;
  white-space: pre; box-shadow: 1px 1px 4px rgba(0, 0, 0, 0.25); }
</style>
)";

const char *const HtmlScript = R"(<div id="tip"></div>
<script>
(function () {
  var tip = document.getElementById("tip");
  document.querySelectorAll("circle.pt").forEach(function (c) {
    var t = c.querySelector("title");
    if (!t) return;
    c.setAttribute("data-tip", t.textContent);
    t.remove();
    c.addEventListener("mousemove", function (e) {
      tip.textContent = c.getAttribute("data-tip");
      tip.style.display = "block";
      tip.style.left = (e.pageX + 14) + "px";
      tip.style.top = (e.pageY + 14) + "px";
    });
    c.addEventListener("mouseleave", function () { tip.style.display = "none"; });
  });
})();
</script>
)";

void Chart::render(bool Html, bool Element) {
  collect();
  chooseRanges();
  if (Element) {
    writeSvg();
    return;
  }
  if (!Html) {
    OS << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
    writeSvg();
    return;
  }
  OS << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n" << HtmlHead;
  OS << "<title>ridge roofline: " << xmlText(M.Path) << "</title>\n</head>\n<body>\n";
  writeSvg();
  OS << HtmlScript << "</body>\n</html>\n";
}

bool isHtml(llvm::StringRef Path) { return Path.ends_with_insensitive(".html"); }

} // namespace

llvm::Error ridge::checkRooflineChartPath(llvm::StringRef Path) {
  if (Path.ends_with_insensitive(".svg") || isHtml(Path))
    return llvm::Error::success();
  return usageError("--roofline '" + Path + "': expected a .svg or .html file");
}

void ridge::renderRooflineChart(llvm::raw_ostream &OS, bool Html, const Model &M,
                                const CostResult &C, const RooflineResult &R,
                                const Config &Cfg) {
  Chart(OS, M, C, R, Cfg).render(Html, /*Element=*/false);
}

void ridge::renderRooflineSvgElement(llvm::raw_ostream &OS, const Model &M, const CostResult &C,
                                     const RooflineResult &R, const Config &Cfg) {
  Chart(OS, M, C, R, Cfg).render(/*Html=*/false, /*Element=*/true);
}

llvm::Error ridge::writeRooflineChart(llvm::StringRef Path, const Model &M,
                                      const CostResult &C, const RooflineResult &R,
                                      const Config &Cfg) {
  if (llvm::Error E = checkRooflineChartPath(Path))
    return E;
  std::string Text;
  llvm::raw_string_ostream SOS(Text);
  renderRooflineChart(SOS, isHtml(Path), M, C, R, Cfg);
  return writeTextFile(Path, Text);
}
