// A drawing as MNIST's digits were made: cropped to its ink, the longer side scaled to 20 px
// (area-averaged, so the grey levels do not depend on the browser's resampling), placed in a
// 28x28 field with its centre of mass at the centre. Used by the <pyrite-mnist> element and
// the /mnist demo page.

export const SIDE = 28; // MNIST's field
const BOX = 20; // MNIST's digits were scaled to fit a 20x20 box...
const CENTRE = SIDE / 2; // ...and placed so that their centre of mass is the field's centre
const INK = 24; // grey level above which a pixel belongs to the drawing's bounding box

// For each of the field's SIDE cells along one axis: the source pixels it covers and their
// weights (the fraction of the cell each covers). Cell j covers source coordinates
// [centre + (j - CENTRE) / scale, ... + 1 / scale).
function cellWeights(centre, scale, length) {
  const cells = [];
  for (let j = 0; j < SIDE; j++) {
    const a = centre + (j - CENTRE) / scale;
    const b = a + 1 / scale;
    const lo = Math.max(0, Math.floor(a));
    const hi = Math.min(length, Math.ceil(b));
    const weights = [];
    for (let x = lo; x < hi; x++) weights.push((Math.min(b, x + 1) - Math.max(a, x)) * scale);
    cells.push({ lo, weights });
  }
  return cells;
}

/** 784 grey levels (0..255, row-major 28x28) of a white-on-black RGBA drawing, or null when
 * it is blank. */
export function toMnistInput(rgba, width, height) {
  const grey = new Float32Array(width * height);
  let minX = width, minY = height, maxX = -1, maxY = -1;
  let mass = 0, sumX = 0, sumY = 0;
  for (let y = 0, i = 0; y < height; y++) {
    for (let x = 0; x < width; x++, i++) {
      const v = rgba[4 * i]; // white on black: the red channel is the grey level
      if (v === 0) continue;
      grey[i] = v;
      mass += v;
      sumX += v * (x + 0.5);
      sumY += v * (y + 0.5);
      if (v > INK) {
        if (x < minX) minX = x;
        if (x > maxX) maxX = x;
        if (y < minY) minY = y;
        if (y > maxY) maxY = y;
      }
    }
  }
  if (maxX < 0) return null;
  const scale = BOX / Math.max(maxX - minX + 1, maxY - minY + 1);
  const columns = cellWeights(sumX / mass, scale, width);
  const rows = cellWeights(sumY / mass, scale, height);
  const across = new Float32Array(height * SIDE); // every source row's columns resampled
  for (let y = 0; y < height; y++) {
    const row = y * width;
    for (let j = 0; j < SIDE; j++) {
      const { lo, weights } = columns[j];
      let sum = 0;
      for (let k = 0; k < weights.length; k++) sum += weights[k] * grey[row + lo + k];
      across[y * SIDE + j] = sum;
    }
  }
  const pixels = new Array(SIDE * SIDE);
  for (let i = 0; i < SIDE; i++) {
    const { lo, weights } = rows[i];
    for (let j = 0; j < SIDE; j++) {
      let sum = 0;
      for (let k = 0; k < weights.length; k++) sum += weights[k] * across[(lo + k) * SIDE + j];
      pixels[i * SIDE + j] = Math.min(255, Math.max(0, Math.round(sum)));
    }
  }
  return pixels;
}
