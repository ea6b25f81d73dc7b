//===- Format.cpp - Number formatting shared by printers and reports ------===//
#include "analyzer/Format.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include <cmath>

using namespace ridge;

std::string ridge::exactNumber(double X) {
  if (std::isfinite(X) && X == std::floor(X) && std::fabs(X) < 9007199254740992.0)
    return llvm::formatv("{0:F0}", X).str();
  return llvm::formatv("{0}", llvm::format("%.6g", X)).str();
}

std::string ridge::withCommas(double X) {
  std::string S = llvm::formatv("{0:F0}", X).str();
  int Pos = static_cast<int>(S.size()) - 3;
  while (Pos > 0 && S[Pos - 1] != '-') {
    S.insert(Pos, ",");
    Pos -= 3;
  }
  return S;
}

std::string ridge::siNumber(double X, const char *Unit) {
  static const char *Prefix[] = {"", "K", "M", "G", "T", "P", "E", "Z", "Y"};
  if (X == 0)
    return *Unit ? std::string("0 ") + Unit : std::string("0");
  int P = 0;
  double A = std::fabs(X);
  while (A >= 999.5 && P < 8) {
    A /= 1000;
    X /= 1000;
    ++P;
  }
  std::string Num = A >= 99.95 ? llvm::formatv("{0:F0}", X).str()
                    : A >= 9.995 ? llvm::formatv("{0:F1}", X).str()
                                 : llvm::formatv("{0:F2}", X).str();
  std::string Suffix = std::string(Prefix[P]) + Unit;
  return Suffix.empty() ? Num : Num + " " + Suffix;
}

std::string ridge::durationText(double S) {
  if (S >= 1)
    return llvm::formatv("{0:F2} s", S).str();
  if (S >= 1e-3)
    return llvm::formatv("{0:F2} ms", S * 1e3).str();
  return llvm::formatv("{0:F1} us", S * 1e6).str();
}

std::string ridge::signedPercent(double P) {
  return llvm::formatv("{0}{1:F1}%", P >= 0 ? "+" : "", P).str();
}
