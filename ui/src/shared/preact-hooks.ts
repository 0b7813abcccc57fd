export * from 'preact/hooks'
