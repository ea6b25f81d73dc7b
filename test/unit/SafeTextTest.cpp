//===- SafeTextTest.cpp - Control characters escaped for a terminal -------===//
#include "analyzer/SafeText.h"
#include "gtest/gtest.h"

using namespace ridge;

// C0 controls (but line breaks and tabs), DEL and C1 are written as \u00XX;
// printable ASCII and valid UTF-8 (U+00A0 and U+00E9, which start with the
// same lead bytes as C1, U+20AC, U+1F600) pass as they are.
TEST(SafeTextTest, EscapesControlsKeepsText) {
  EXPECT_EQ(escapeControls("plain name/with:parts-1"), "plain name/with:parts-1");
  EXPECT_EQ(escapeControls("a\x1b[31mb"), "a\\u001b[31mb");
  EXPECT_EQ(escapeControls("t\x1b]0;x\x07"), "t\\u001b]0;x\\u0007");
  EXPECT_EQ(escapeControls("cr\rdel\x7f"), "cr\\u000ddel\\u007f");
  EXPECT_EQ(escapeControls("two\nlines\tand a tab"), "two\nlines\tand a tab");
  EXPECT_EQ(escapeControls("c1 \xc2\x9b[2J"), "c1 \\u009b[2J");
  EXPECT_EQ(escapeControls("lone \x9b byte"), "lone \\u009b byte");
  EXPECT_EQ(escapeControls("nbsp\xc2\xa0 e\xc3\xa9 euro\xe2\x82\xac smile\xf0\x9f\x98\x80"),
            "nbsp\xc2\xa0 e\xc3\xa9 euro\xe2\x82\xac smile\xf0\x9f\x98\x80");
  EXPECT_EQ(escapeControls(std::string("nul\0x", 5)), "nul\\u0000x");
  // A lead byte at the end is kept (an incomplete character, not a control).
  EXPECT_EQ(escapeControls("end\xc2"), "end\xc2");
}

// The stream decides a C1 control split across two writes, and a long run
// of plain text around controls (the 16-byte scan) is written whole.
TEST(SafeTextTest, StreamAcrossWrites) {
  std::string Out;
  {
    llvm::raw_string_ostream S(Out);
    ControlEscapingStream E(S);
    E.SetUnbuffered(); // every write reaches the filter as it is made
    E << "first \xc2";
    E << "\x9b" << "J then " << std::string(40, 'x') << "\x1b" << std::string(20, 'y');
    E << " keep \xc2";
    E << "\xa0" << " end\n";
  }
  EXPECT_EQ(Out, "first \\u009bJ then " + std::string(40, 'x') + "\\u001b" +
                     std::string(20, 'y') + " keep \xc2\xa0 end\n");
}
