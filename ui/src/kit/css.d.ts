/** A stylesheet imported as text: `import css from './page.css' with { type: 'text' }` (see styles.ts). */
declare module '*.css' {
  const text: string
  export default text
}
