/*
 * "Did you mean": the edit distance at its edges and the nearest name,
 * as the usage errors, rv-augment's ops and rv-train-gpu's presets use
 * them.
 */
#include <stdio.h>
#include <string.h>

#include "base/near.h"
#include "unit.h"

static size_t
dist(const char *a, const char *b, size_t cap)
{
	return rv_edit_distance(a, strlen(a), b, strlen(b), cap);
}

static void
t_distance(void)
{
	EXPECT_EQ(dist("", "", 2), 0);
	EXPECT_EQ(dist("flip", "flip", 2), 0);
	EXPECT_EQ(dist("fllip", "flip", 2), 1);	/* an insertion */
	EXPECT_EQ(dist("rotat", "rotate", 2), 1);	/* a deletion */
	EXPECT_EQ(dist("limt", "limit", 2), 1);
	EXPECT_EQ(dist("levle", "level", 2), 1);	/* a transposition */
	EXPECT_EQ(dist("kitten", "sitting", 3), 3);
	EXPECT_EQ(dist("kitten", "sitting", 2), 3);	/* over the cap */
	EXPECT_EQ(dist("a", "abcdef", 2), 3);	/* lengths alone */
	/* too long to compare: over the cap */
	EXPECT_EQ(dist("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
	    "a", 2), 3);
}

static void
t_nearest(void)
{
	static const char *const presets[] = {
		"mlp", "cnn-small", "resnet20", "resnet18", "resnet50", NULL,
	};
	static const char *const ops[] = { "flip", "rotate", "rrc", NULL };

	EXPECT(rv_nearest("resnet-20", presets) != NULL);
	EXPECT(rv_nearest("CNN_small", presets) != NULL);
	EXPECT(rv_nearest("fllip", ops) != NULL);
	if (unit_st.cur_failed)
		return;
	EXPECT_STR(rv_nearest("resnet-20", presets), "resnet20");
	EXPECT_STR(rv_nearest("CNN_small", presets), "cnn-small");
	EXPECT_STR(rv_nearest("resnet5", presets), "resnet50");
	EXPECT(rv_nearest("bogus", presets) == NULL);
	EXPECT(rv_nearest("resnet20", presets) == NULL);	/* no mistake */
	EXPECT_STR(rv_nearest("fllip", ops), "flip");
	EXPECT_STR(rv_nearest("rotat", ops), "rotate");
	/* short words: one edit at most */
	EXPECT(rv_nearest("rr", ops) != NULL);	/* rrc */
	EXPECT(rv_nearest("x", ops) == NULL);
	EXPECT_EQ(rv_near("flpi", 4, "flip", 4), 1);
	EXPECT_EQ(rv_near("FLIP", 4, "flip", 4), 0);
	EXPECT(rv_near("flip", 4, "flip", 4) == (size_t)-1);
	/* names offered with their length, as a usage text holds them */
	{
		struct rv_nearby nb;
		const char *usage = "--limit N --level L";

		rv_nearby_init(&nb, "levle", 5);
		rv_nearby_offer(&nb, usage + 2, 5);
		rv_nearby_offer(&nb, usage + 12, 5);
		EXPECT(rv_nearby_best(&nb) == usage + 12 && nb.len == 5);
		rv_nearby_offer(&nb, "levle", 5);
		EXPECT(rv_nearby_best(&nb) == NULL);	/* a name after all */
	}
}

int
main(void)
{
	RUN(t_distance);
	RUN(t_nearest);
	return UNIT_DONE();
}
