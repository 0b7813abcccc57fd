export * from '@preact/signals'
