//===- Format.h - Number formatting shared by printers and reports -*- C++ -*-===//
#ifndef RIDGE_ANALYZER_FORMAT_H
#define RIDGE_ANALYZER_FORMAT_H

#include <string>

namespace ridge {

/// Exact integer digits for integral values below 2^53; otherwise %.6g.
/// What lit tests CHECK, so that numbers can be compared with hand formulas.
std::string exactNumber(double X);
/// "1,234,567"
std::string withCommas(double X);
/// "12.3 G" style with SI prefixes, 3 significant digits; Unit appended.
std::string siNumber(double X, const char *Unit = "");
/// A time for reports: "1.25 s", "12.34 ms", "56.7 us".
std::string durationText(double Seconds);
/// A change in percent with its sign: "+5.0%", "-12.3%".
std::string signedPercent(double Percent);

} // namespace ridge

#endif
