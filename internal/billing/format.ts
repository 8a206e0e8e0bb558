/**
 * Money as people and clients read it: dollars with a thousands separator.
 * No imports, so the playground page and the CLI show amounts exactly as the
 * API formats them.
 */

/** Cents as dollars, rounded half up to a whole cent: 123456 → "$1,234.56", -5 → "-$0.05". */
export function formatCents(cents: number): string {
  const whole = Math.round(Math.abs(cents));
  const dollars = String(Math.floor(whole / 100)).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  return `${cents < 0 && whole > 0 ? "-" : ""}$${dollars}.${String(whole % 100).padStart(2, "0")}`;
}
