package luatest

import "math/big"

// Edges returns multipliers k in 1..most for which k*a lands within three
// units of a multiple of c: where floor(k*a/c) and ceil(k*a/c) are decided
// by the last digits of a product that, in a double, may not have them.
// Random search almost never finds such k; a modular inverse does. (When
// c divides a, every k is exact and Edges returns 1 and most.)
func Edges(a, c, most int64) []int64 {
	A, C := big.NewInt(a), big.NewInt(c)
	g := new(big.Int).GCD(nil, nil, A, C)
	ag, cg := new(big.Int).Quo(A, g), new(big.Int).Quo(C, g)
	if cg.Cmp(big.NewInt(1)) == 0 {
		return []int64{1, most}
	}
	inv := new(big.Int).ModInverse(ag, cg)
	var out []int64
	for _, m := range []int64{1, 2, 3, -1, -2, -3} {
		// k*a ≡ m*g (mod c)  <=>  k ≡ m * inv(a/g) (mod c/g); take the
		// least such k and a few larger ones, spread out.
		k := new(big.Int).Mul(big.NewInt(m), inv)
		k.Mod(k, cg)
		if k.Sign() == 0 {
			k.Set(cg)
		}
		for step := int64(1); step <= 4 && k.Cmp(big.NewInt(most)) <= 0; step++ {
			out = append(out, k.Int64())
			k.Add(k, new(big.Int).Mul(cg, big.NewInt(step*step*37)))
		}
	}
	return out
}
