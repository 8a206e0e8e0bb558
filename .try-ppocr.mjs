import Ocr from '@gutenye/ocr-node'
import { readFileSync } from 'node:fs'
const t0 = performance.now()
const ocr = await Ocr.create()
const t1 = performance.now()
const lines = await ocr.detect(readFileSync(process.argv[2]))
const t2 = performance.now()
console.log(JSON.stringify(lines.slice(0,5)))
for (const l of lines) console.log(l.mean.toFixed(3), l.text)
console.error(`load ${(t1-t0).toFixed(0)} ms, detect ${(t2-t1).toFixed(0)} ms`)
