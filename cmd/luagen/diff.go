package main

import (
	"fmt"
	"strings"
)

// unifiedDiff returns a unified diff from old to new with three lines of
// context, or "" when they are equal. It uses a plain LCS table: generated
// files are small, and -check only needs to show what is stale.
func unifiedDiff(oldName, newName, old, new string) string {
	if old == new {
		return ""
	}
	a, b := splitLines(old), splitLines(new)
	// lcs[i][j] is the LCS length of a[i:] and b[j:].
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	type line struct {
		op   byte // ' ', '-', '+'
		text string
		ai   int // line index in a (for ' ' and '-'), else the next a line
		bi   int
	}
	var lines []line
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			lines = append(lines, line{' ', a[i], i, j})
			i, j = i+1, j+1
		case i < len(a) && (j == len(b) || lcs[i+1][j] >= lcs[i][j+1]):
			lines = append(lines, line{'-', a[i], i, j})
			i++
		default:
			lines = append(lines, line{'+', b[j], i, j})
			j++
		}
	}

	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", oldName, newName)
	const context = 3
	for k := 0; k < len(lines); {
		if lines[k].op == ' ' {
			k++
			continue
		}
		// A hunk runs from context lines before a change to context lines
		// after the last change that is within 2*context of the previous.
		start := max(k-context, 0)
		end := k
		for n := k; n < len(lines) && n <= end+2*context; n++ {
			if lines[n].op != ' ' {
				end = n
			}
		}
		end = min(end+context, len(lines)-1)
		var oldCount, newCount int
		for _, l := range lines[start : end+1] {
			if l.op != '+' {
				oldCount++
			}
			if l.op != '-' {
				newCount++
			}
		}
		// An empty side starts at the line before it, as diff -u prints it.
		oldStart, newStart := lines[start].ai+1, lines[start].bi+1
		if oldCount == 0 {
			oldStart--
		}
		if newCount == 0 {
			newStart--
		}
		fmt.Fprintf(&out, "@@ -%d,%d +%d,%d @@\n", oldStart, oldCount, newStart, newCount)
		for _, l := range lines[start : end+1] {
			out.WriteByte(l.op)
			out.WriteString(l.text)
			out.WriteByte('\n')
		}
		k = end + 1
	}
	return out.String()
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}
