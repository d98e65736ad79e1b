globalThis.same = (a, b) => %HaveSameMap(a, b);
